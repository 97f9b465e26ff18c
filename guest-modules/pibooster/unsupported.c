// SPDX-License-Identifier: GPL-2.0
/*
 * pibooster built for a kernel other than 6.1 or 6.12 (Kbuild picks this
 * file): the hooks are those kernels' page-table functions with the cache
 * in them, and their bodies follow them (compat.h says what differs
 * between the two; another kernel may differ in more).  The module says
 * so and does not load.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/utsname.h>

static int __init pib_init(void)
{
	pr_err("the hooks are Linux 6.1's and 6.12's page-table functions: not for %s\n",
	       init_utsname()->release);
	return -EOPNOTSUPP;
}
module_init(pib_init);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("PiBooster: a cache of semi-writable page-table frames");

// SPDX-License-Identifier: GPL-2.0
/*
 * A module that WARNs when loaded and otherwise behaves.  The harness
 * self-test loads it and asserts that the harness fails the test on the
 * splat even though every command in the guest succeeded.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/bug.h>
#include <linux/init.h>
#include <linux/module.h>

static int __init vmtest_warn_init(void)
{
	WARN(1, "deliberate warning from the harness self-test\n");
	return 0;
}

static void __exit vmtest_warn_exit(void)
{
}

module_init(vmtest_warn_init);
module_exit(vmtest_warn_exit);
MODULE_DESCRIPTION("VM test harness: a module that WARNs");
MODULE_LICENSE("GPL");

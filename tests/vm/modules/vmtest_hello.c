// SPDX-License-Identifier: GPL-2.0
/*
 * A module for the VM harness's own tests: it loads, prints one line
 * carrying its parameter, and unloads.  The test checks that line in the
 * guest's kernel log, proving that our out-of-tree modules build against the
 * fetched headers and load into the fetched kernel.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/init.h>
#include <linux/module.h>

static int answer = 1;
module_param(answer, int, 0444);
MODULE_PARM_DESC(answer, "value echoed into the kernel log at load");

static int __init vmtest_hello_init(void)
{
	pr_info("loaded, answer=%d\n", answer);
	return 0;
}

static void __exit vmtest_hello_exit(void)
{
	pr_info("unloaded\n");
}

module_init(vmtest_hello_init);
module_exit(vmtest_hello_exit);
MODULE_DESCRIPTION("VM test harness: hello module");
MODULE_LICENSE("GPL");

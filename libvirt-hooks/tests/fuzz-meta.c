// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness for what the hook parses from untrusted text.  The first
 * input byte chooses the parser: even, the domain XML of stdin (meta_parse,
 * with the -device string and creds= inside); odd, qemu.conf (qconf_parse).
 * Whatever the input, neither may crash, leak or read out of bounds; a
 * domain meta_parse accepts is within every bound, and its device string,
 * written again by the generator's devarg_format(), reads back the same.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "hook.h"
#include "qemuconf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_domain(const struct hook_domain *dom)
{
	const struct hook_meta *m = &dom->meta;
	char dev[HOOK_DEVARG_MAX + 1];
	struct hook_device again;
	struct hook_err e;

	assert(meta_check(m, &e) == 0);
	assert(strlen(m->service) <= HOOK_SERVICE_MAX);
	assert(strlen(m->socket) <= HOOK_SOCKET_MAX);
	assert(strlen(dom->uuid) == HOOK_UUID_LEN);
	assert(m->vm_id <= m->reducers && m->reducers <= SIVSHM_MAX_REDUCERS);
	assert((m->role == HOOK_MAPPER) == (m->vm_id == 0));
	assert(devarg_agree(m, &dom->dev, &e) == 0);
	assert(devarg_format(m, dom->dev.vectors, dev, sizeof(dev)) == 0);
	assert(devarg_parse(dev, &again, &e) == 0);
	assert(devarg_agree(m, &again, &e) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char user[HOOK_FIELD_MAX + 1], group[HOOK_FIELD_MAX + 1];
	struct hook_domain dom;
	struct hook_err e = { "" };
	int ret;

	if (size < 1)
		return 0;
	if (data[0] & 1) {
		if (qconf_parse((const char *)data + 1, size - 1, user, group, &e))
			assert(e.msg[0]);
		else
			assert(strlen(user) <= HOOK_FIELD_MAX &&
			       strlen(group) <= HOOK_FIELD_MAX);
		return 0;
	}
	ret = meta_parse((const char *)data + 1, size - 1, &dom, &e);
	if (ret < 0)
		assert(e.msg[0] && strlen(e.msg) < HOOK_MSG_MAX);
	else if (ret > 0)
		check_domain(&dom);
	return 0;
}

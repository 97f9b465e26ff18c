// SPDX-License-Identifier: GPL-2.0
/*
 * For static guest programs built from code that knows nothing of static
 * providers (charcount against libsivshm's RDMA backend): register rxe
 * before main(), before any thread, as rxe-static.h asks.  The devices
 * themselves are found later, at librdmacm's first call.
 */
#include "rxe-static.h"

static void __attribute__((constructor)) rxe_static_ctor(void)
{
	rxe_static_init();
}

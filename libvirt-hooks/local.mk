# libvirt-hooks/: the QEMU hook libvirt runs for sivshm domains, the domain
# XML generator, their tests and man pages (docs/libvirt.md).
# Included from the top Makefile.am; paths are relative to the top.

HOOK_CPPFLAGS = $(AM_CPPFLAGS) $(LIBXML2_CFLAGS) -I$(srcdir)/libvirt-hooks
HOOK_LIBS = libvirt-hooks/libsivshm-hook.la libsivshm/libsivshm-core.la \
	$(LIBXML2_LIBS)

# The units both programs and the tests share.
noinst_LTLIBRARIES += libvirt-hooks/libsivshm-hook.la
libvirt_hooks_libsivshm_hook_la_SOURCES = \
	libvirt-hooks/hook.h \
	libvirt-hooks/err.c \
	libvirt-hooks/value.c \
	libvirt-hooks/devarg.c \
	libvirt-hooks/meta.c \
	libvirt-hooks/qemuconf.c libvirt-hooks/qemuconf.h \
	libvirt-hooks/safedir.c libvirt-hooks/safedir.h \
	libvirt-hooks/lease.c libvirt-hooks/lease.h
libvirt_hooks_libsivshm_hook_la_CPPFLAGS = $(HOOK_CPPFLAGS)

# The hook, installed under the name libvirt runs it by:
# $(sysconfdir)/libvirt/hooks/qemu.d/50-sivshm.
libvirthookexecdir = $(sysconfdir)/libvirt/hooks/qemu.d
libvirthookexec_PROGRAMS = libvirt-hooks/50-sivshm
libvirt_hooks_50_sivshm_SOURCES = libvirt-hooks/sivshm-hook.c
libvirt_hooks_50_sivshm_CPPFLAGS = $(HOOK_CPPFLAGS)
libvirt_hooks_50_sivshm_LDADD = $(HOOK_LIBS)

bin_PROGRAMS += libvirt-hooks/sivshm-virt-xml
libvirt_hooks_sivshm_virt_xml_SOURCES = libvirt-hooks/sivshm-virt-xml.c
libvirt_hooks_sivshm_virt_xml_CPPFLAGS = $(HOOK_CPPFLAGS)
libvirt_hooks_sivshm_virt_xml_LDADD = $(HOOK_LIBS)

dist_man1_MANS = libvirt-hooks/man/sivshm-virt-xml.1
dist_man8_MANS = libvirt-hooks/man/sivshm-hook.8

# Tests, built into tests/unit/ where tests/runtests.py finds them.
HOOK_TEST_CPPFLAGS = $(HOOK_CPPFLAGS) -I$(srcdir)/tests/unit \
	-DHOOK_SRCDIR='"$(abs_top_srcdir)"' -DHOOK_BUILDDIR='"$(abs_top_builddir)"'
HOOK_TESTS = tests/unit/test-libvirt-hook tests/unit/test-libvirt-virt-xml \
	tests/unit/test-libvirt-doc
check_PROGRAMS += $(HOOK_TESTS)
tests_unit_test_libvirt_hook_SOURCES = libvirt-hooks/tests/test-hook.c \
	tests/unit/check.h
tests_unit_test_libvirt_hook_CPPFLAGS = $(HOOK_TEST_CPPFLAGS)
tests_unit_test_libvirt_hook_LDADD = $(HOOK_LIBS)
tests_unit_test_libvirt_virt_xml_SOURCES = libvirt-hooks/tests/test-virt-xml.c \
	tests/unit/check.h
tests_unit_test_libvirt_virt_xml_CPPFLAGS = $(HOOK_TEST_CPPFLAGS)
tests_unit_test_libvirt_virt_xml_LDADD = $(HOOK_LIBS)
tests_unit_test_libvirt_doc_SOURCES = libvirt-hooks/tests/test-doc.c \
	tests/unit/check.h
tests_unit_test_libvirt_doc_CPPFLAGS = $(HOOK_TEST_CPPFLAGS)
tests_unit_test_libvirt_doc_LDADD = $(HOOK_LIBS)

# The parsers' fuzz harness (clang's libFuzzer, ASan, UBSan), run for a
# bounded time by tests/unit/test-libvirt-fuzz, fuzz.sh with the source
# directory filled in.
FUZZ_HOOK_SRC = $(srcdir)/libvirt-hooks/tests/fuzz-meta.c \
	$(srcdir)/libvirt-hooks/meta.c $(srcdir)/libvirt-hooks/devarg.c \
	$(srcdir)/libvirt-hooks/value.c $(srcdir)/libvirt-hooks/err.c \
	$(srcdir)/libvirt-hooks/qemuconf.c \
	$(srcdir)/libsivshm/protocol/cred.c \
	$(srcdir)/libsivshm/protocol/geometry.c
libvirt-hooks/tests/fuzz-meta: $(FUZZ_HOOK_SRC) $(srcdir)/libvirt-hooks/hook.h \
		$(srcdir)/libvirt-hooks/qemuconf.h $(srcdir)/libsivshm/protocol/cred.h
	$(AM_V_at)$(MKDIR_P) libvirt-hooks/tests
	$(AM_V_CCLD)$(CLANG) $(FUZZ_CFLAGS) $(LIBXML2_CFLAGS) \
		-I$(srcdir)/libvirt-hooks -o $@ $(FUZZ_HOOK_SRC) $(LIBXML2_LIBS)
tests/unit/test-libvirt-fuzz: $(srcdir)/libvirt-hooks/tests/fuzz.sh \
		libvirt-hooks/tests/fuzz-meta
	$(AM_V_GEN)sed 's|%SRCDIR%|$(abs_top_srcdir)|' \
		$(srcdir)/libvirt-hooks/tests/fuzz.sh >$@ && chmod +x $@

# The C of libvirt-hooks/ against the kernel's checkpatch.pl.
tests/unit/test-libvirt-checkpatch: $(srcdir)/libvirt-hooks/tests/checkpatch.sh
	$(AM_V_GEN)sed 's|%SRCDIR%|$(abs_top_srcdir)|' \
		$(srcdir)/libvirt-hooks/tests/checkpatch.sh >$@ && chmod +x $@

HOOK_WRAPPERS = tests/unit/test-libvirt-fuzz tests/unit/test-libvirt-checkpatch
check_SCRIPTS = $(HOOK_WRAPPERS)
CLEANFILES += libvirt-hooks/tests/fuzz-meta $(HOOK_WRAPPERS)

# make check-unit builds them too.
unit-build: $(HOOK_TESTS) $(HOOK_WRAPPERS)

# The checked-in examples, written again by libvirt-hooks/examples/generate.sh
# (test-libvirt-virt-xml fails when they differ from what it writes).
.PHONY: libvirt-examples
libvirt-examples: libvirt-hooks/sivshm-virt-xml
	sh $(srcdir)/libvirt-hooks/examples/generate.sh \
		libvirt-hooks/sivshm-virt-xml $(srcdir)/libvirt-hooks/examples

EXTRA_DIST += libvirt-hooks/local.mk libvirt-hooks/examples \
	libvirt-hooks/tests/fuzz.sh libvirt-hooks/tests/fuzz-meta.c \
	libvirt-hooks/tests/checkpatch.sh \
	libvirt-hooks/tests/fuzz-meta.dict

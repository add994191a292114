/* features.c - which optional libraries this build has, and what each one enables. */
#include "helper.h"

static void feature(struct jbuf *out, const char *name, int on, const char *enables, const char *fix)
{
    jbuf_key(out, name);
    jbuf_open(out, '{');
    jbuf_kbool(out, "on", on);
    jbuf_kstr(out, "enables", enables);
    jbuf_kstr(out, "fix", on ? NULL : fix);
    jbuf_close(out, '}');
}

void features_describe(struct jbuf *out)
{
#ifdef HAVE_LIBPFM
    const int pfm = 1;
#else
    const int pfm = 0;
#endif
#ifdef HAVE_ELFUTILS
    const int dw = 1;
#else
    const int dw = 0;
#endif
#ifdef HAVE_CAPSTONE
    const int cs = 1;
#else
    const int cs = 0;
#endif
    jbuf_key(out, "features");
    jbuf_open(out, '{');
    feature(out, "libpfm4", pfm, "pmu, encode by libpfm4 name", "apt-get install libpfm4-dev, then make -C native");
    feature(out, "elfutils", dw, "skid, funcs (ELF symbols, build-id, .eh_frame)",
            "apt-get install pkg-config libdw-dev libelf-dev, then make -C native");
    feature(out, "capstone", cs, "skid, funcs contains_pause (x86 decoding)",
            "apt-get install pkg-config libcapstone-dev, then make -C native");
    jbuf_close(out, '}');
}

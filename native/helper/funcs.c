/* funcs.c - function boundaries from .eh_frame for stripped binaries; which ones hold PAUSE. */
#define _GNU_SOURCE
#include "helper.h"
#include "decode.h"
#include "elfbin.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* 1 when [start,end) decodes to at least one PAUSE, 0 if not, negative errno on failure. */
static int range_has_pause(struct elfbin *b, uint64_t start, uint64_t end)
{
    size_t len = end - start;
    uint8_t *bytes;
    struct func_code f;
    int rc;

    if (!len || len > (64u << 20))
        return 0;
    bytes = malloc(len);
    if (!bytes)
        return -ENOMEM;
    rc = elfbin_read(b, start, bytes, len);
    if (!rc && !memmem(bytes, len, "\xf3\x90", 2)) { /* cheap filter before decoding */
        free(bytes);
        return 0;
    }
    if (!rc)
        rc = func_decode(bytes, len, start, &f);
    free(bytes);
    if (rc)
        return rc;
    rc = func_has_kind(&f, KIND_PAUSE);
    func_free(&f);
    return rc;
}

static void func_describe(struct jbuf *out, struct elfbin *b, uint64_t start, uint64_t end)
{
    const struct esym *sym = elfbin_symbol_at(b, start);
    int pause = range_has_pause(b, start, end);

    jbuf_khex(out, "start", start);
    jbuf_khex(out, "end", end);
    jbuf_kuint(out, "size", end - start);
    jbuf_kstr(out, "name", sym ? sym->name : NULL);
    if (sym)
        jbuf_kuint(out, "name_offset", start - sym->addr);
    if (pause >= 0)
        jbuf_kbool(out, "contains_pause", pause);
    else
        jbuf_kstr(out, "pause_error", pause == -ENOSYS ? "built without capstone" : strerror(-pause));
}

static void addr_describe(struct jbuf *out, struct elfbin *b, const char *text, int offsets)
{
    uint64_t v = strtoull(text, NULL, 16), vaddr = v;
    const struct range *r;
    const struct esym *sym;

    jbuf_open(out, '{');
    jbuf_kstr(out, "input", text);
    if (offsets && elfbin_offset_to_vaddr(b, v, &vaddr)) {
        jbuf_kstr(out, "error", "file offset not in a loaded segment");
        jbuf_close(out, '}');
        return;
    }
    jbuf_khex(out, "vaddr", vaddr);
    r = elfbin_fde_at(b, vaddr);
    sym = elfbin_symbol_at(b, vaddr);
    if (r) {
        func_describe(out, b, r->start, r->end);
        jbuf_kstr(out, "source", "eh_frame");
    } else if (sym) {
        func_describe(out, b, sym->addr, sym->addr + sym->size);
        jbuf_kstr(out, "source", "symbol");
    } else {
        jbuf_kstr(out, "error", "no FDE or symbol covers this address");
    }
    if (sym) {
        jbuf_kstr(out, "symbol", sym->name);
        jbuf_kstr(out, "display", elfbin_display_name(b, sym));
        jbuf_kuint(out, "symbol_offset", vaddr - sym->addr);
    }
    jbuf_close(out, '}');
}

static int funcs_open(struct jbuf *out, const char *binary, const char *debug, struct elfbin **b)
{
    const struct range *r;
    size_t n = 0;
    int rc;

    jbuf_open(out, '{');
    jbuf_kstr(out, "binary", binary);
    rc = elfbin_open_with(binary, debug, b);
    if (rc) {
        jbuf_kstr(out, "error",
                  rc == -ENOENT                    ? "binary not found"
                          : rc == -ESTALE          ? "the debug file's build-id differs from the binary's"
                          : rc == -ENODATA         ? "the debug file has no symbol table"
                          : rc == -ENOSYS          ? "built without elfutils"
                          : rc == -EPROTONOSUPPORT ? "not an x86-64 binary"
                                                   : "not a readable ELF file");
        jbuf_close(out, '}');
        return rc;
    }
    elfbin_fdes(*b, &r, &n);
    jbuf_kstr(out, "build_id", elfbin_build_id(*b));
    jbuf_kstr(out, "symbols", elfbin_symtab_kind(*b));
    jbuf_kuint(out, "named_functions", elfbin_nsyms(*b));
    jbuf_kuint(out, "fde_functions", n);
    return 0;
}

int funcs_lookup(struct jbuf *out, const char *binary, const char *debug, FILE *in, int offsets)
{
    struct elfbin *b;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = funcs_open(out, binary, debug, &b);

    if (rc)
        return rc;
    jbuf_key(out, "addresses");
    jbuf_open(out, '[');
    while ((len = getline(&line, &cap, in)) >= 0) {
        while (len && (line[len - 1] == '\n' || line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        if (len && line[0] != '#')
            addr_describe(out, b, line, offsets);
    }
    jbuf_close(out, ']');
    jbuf_close(out, '}');
    free(line);
    elfbin_close(b);
    return 0;
}

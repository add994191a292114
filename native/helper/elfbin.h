/* elfbin.h - an x86 ELF file: symbols, build-id, bytes at a virtual address, FDE ranges. */
#ifndef PMUPROF_ELFBIN_H
#define PMUPROF_ELFBIN_H

#include <stddef.h>
#include <stdint.h>

struct esym {
    const char *name;
    uint64_t addr;
    uint64_t size;
};

struct range {
    uint64_t start;
    uint64_t end;
};

struct elfbin;

/* 0, or -ENOENT (missing), -ENOEXEC (not ELF), -EPROTONOSUPPORT (not x86-64), -ENOSYS (no elfutils). */
int elfbin_open(const char *path, struct elfbin **out);
/* elfbin_open, then names from a separate debug file (objcopy --only-keep-debug, -dbgsym packages)
 * when debug is non-NULL: its build-id must equal the binary's (-ESTALE), its .symtab replaces the
 * binary's symbols (symtab kind "debuginfo"); code bytes and .eh_frame still come from the binary. */
int elfbin_open_with(const char *path, const char *debug, struct elfbin **out);
void elfbin_close(struct elfbin *b);
const char *elfbin_build_id(const struct elfbin *b); /* hex, "" if none */
const char *elfbin_symtab_kind(const struct elfbin *b); /* "symtab", "dynsym" or "none" */
size_t elfbin_nsyms(const struct elfbin *b);
/* A function symbol by ELF name, demangled name, or demangled name without parameters. */
const struct esym *elfbin_find_symbol(struct elfbin *b, const char *name);
/* The symbol's name as perf prints it: demangled (with parameters) when C++, else the ELF name. */
const char *elfbin_display_name(struct elfbin *b, const struct esym *s);
/* The function symbol whose [addr, addr+size) holds vaddr, or NULL. */
const struct esym *elfbin_symbol_at(const struct elfbin *b, uint64_t vaddr);
/* Copy len bytes at vaddr from the file; 0 or -EFAULT when not file-backed. */
int elfbin_read(const struct elfbin *b, uint64_t vaddr, void *buf, size_t len);
/* File offset -> vaddr through PT_LOAD segments; 0 or -EFAULT. */
int elfbin_offset_to_vaddr(const struct elfbin *b, uint64_t off, uint64_t *vaddr);
/* Function ranges from .eh_frame FDEs, sorted by start (parsed on first call). */
int elfbin_fdes(struct elfbin *b, const struct range **out, size_t *n);
/* The FDE range holding vaddr, or NULL. */
const struct range *elfbin_fde_at(struct elfbin *b, uint64_t vaddr);

#endif

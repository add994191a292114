/* elfbin_priv.h - the elfbin struct, shared by elfbin.c and ehframe.c only. */
#ifndef PMUPROF_ELFBIN_PRIV_H
#define PMUPROF_ELFBIN_PRIV_H

#include <libelf.h>

#include "elfbin.h"

struct elfbin {
    int fd;
    Elf *elf;
    int dbg_fd; /* separate debug file, -1 when none */
    Elf *dbg_elf;
    struct esym *syms;
    size_t nsyms;
    char **demangled; /* parallel to syms, filled on the first name miss */
    void *libcxx; /* dlopen handle for __cxa_demangle */
    const char *symtab_kind;
    char build_id[129];
    struct range *fdes;
    size_t nfdes;
    int fdes_loaded;
};

#endif

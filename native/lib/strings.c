/* The folder's interned strings: text rendered as the folded format writes it, and pids (fold.c, frames.c
 * and finish.c all add to them; this file calls none of them). */
#define _GNU_SOURCE
#include <errno.h>

#include "fold_int.h"
#include "text.h"

int64_t rstr_render(folder_t *f, const char *s, size_t n, int flags)
{
    int added;
    f->tmp.len = 0;
    if (text_render(&f->tmp, s, n, flags))
        return -ENOMEM;
    return itab_intern(&f->rstr, f->tmp.p, f->tmp.len, &added);
}

int put_pid(folder_t *f, buf_t *b, uint64_t pid)
{
    if (pid == PID_UNKNOWN)
        return buf_append(b, "-1", 2);
    if (pid >= BIG_PID) {
        size_t n;
        const char *s = itab_key(&f->bignum, (uint32_t)(pid - BIG_PID), &n);
        return buf_append(b, s, n);
    }
    return buf_put_u64(b, pid);
}

/* perf.data reader test library for pd_jit: a named function and a static one. */
__attribute__((noinline)) static unsigned long pd_lib_inner(unsigned long x)
{
    for (int i = 0; i < 20000; i++)
        x = x * 33 + (unsigned long)i;
    return x;
}

unsigned long pd_lib_spin(unsigned long x)
{
    return pd_lib_inner(x) + 1;
}

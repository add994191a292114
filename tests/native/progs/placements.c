/* Known skid placements: every global label *_after sits right after the instruction under test. */
volatile int keep_going;
volatile int counter;
int shared;
long wide;

__attribute__((noinline)) void loop_pause(void)
{
	while (keep_going) {
		__asm__ __volatile__("pause\n.globl lp_after\nlp_after:\n" ::: "memory");
		counter++;
	}
}

__attribute__((noinline)) void pause_then_jump(void)
{
	__asm__ __volatile__("pause\n.globl pj_after\npj_after:\n\tjmp 1f\n1:\n" ::: "memory");
	counter++;
}

__attribute__((noinline)) void rep_nop_spelling(void)
{
	while (keep_going)
		__asm__ __volatile__("rep; nop\n.globl rn_after\nrn_after:\n" ::: "memory");
}

__attribute__((noinline)) void fences(void)
{
	__asm__ __volatile__("mfence\n.globl mf_after\nmf_after:\n"
			     "lfence\n.globl lf_after\nlf_after:\n"
			     "sfence\n.globl sf_after\nsf_after:\n" ::: "memory");
	counter++;
}

/* A NOP between a fence and the stalled instruction: the skid passes over the NOP. */
__attribute__((noinline)) void fence_then_nops(void)
{
	__asm__ __volatile__("mfence\nnop\n.globl fn1_after\nfn1_after:\n"
			     "addl $1, %0\nnop\n.globl an1_after\nan1_after:\n"
			     "mfence\nnop\nnop\nnop\n.globl fn3_after\nfn3_after:\n"
			     "addl $1, %0\n" : "+m"(shared) :: "memory");
}

__attribute__((noinline)) int locked(int v)
{
	__asm__ __volatile__("lock xaddl %0, %1\n.globl lx_after\nlx_after:\n"
			     "xchgl %0, %1\n.globl xc_after\nxc_after:\n"
			     "addl %0, %1\n.globl plain_after\nplain_after:\n"
			     : "+r"(v), "+m"(shared) :: "memory");
	return v;
}

/*
 * The full fences that are not mfence: a locked no-op on a stack slot (GCC's __sync_synchronize()) and an
 * xchg whose old value is overwritten unread (a seq_cst store); beside them the look-alikes that are not
 * (a locked OR that changes the slot, a locked no-op on shared data, an xchg whose old value is read).
 */
__attribute__((noinline)) void fence_forms(void)
{
	__asm__ __volatile__("lock orq $0, (%%rsp)\n.globl lo_after\nlo_after:\n"
			     "lock addl $0, 8(%%rsp)\n.globl la_after\nla_after:\n"
			     "lock orq $1, (%%rsp)\n.globl ln_after\nln_after:\n"
			     "lock orq $0, %0\n.globl lg_after\nlg_after:\n"
			     "xchgq %%rax, %0\n.globl xs_after\nxs_after:\n"
			     "movq $1, %%rax\n"
			     : "+m"(wide) :: "rax", "memory");
}

__attribute__((noinline)) unsigned long serializing(void)
{
	unsigned a = 0, b, c = 0, d;
	unsigned lo, hi;

	__asm__ __volatile__("cpuid\n.globl cp_after\ncp_after:\n" : "+a"(a), "=b"(b), "+c"(c), "=d"(d));
	__asm__ __volatile__("rdtsc\n.globl rd_after\nrd_after:\n" : "=a"(lo), "=d"(hi));
	return ((unsigned long)hi << 32 | lo) + a + b + c + d;
}

/* Hand-written so the layout is exact: PAUSE before ret, and a PAUSE whose successor is a jump target. */
__asm__(".text\n"
	".globl pause_before_ret\n.type pause_before_ret,@function\n"
	"pause_before_ret:\n\tpause\n.globl pr_after\npr_after:\n\tret\n"
	".size pause_before_ret, .-pause_before_ret\n"
	".globl ambiguous_target\n.type ambiguous_target,@function\n"
	"ambiguous_target:\n\ttestl %edi, %edi\n\tjz amb_after\n\tpause\n"
	".globl amb_after\namb_after:\n\tnop\n\tret\n"
	".size ambiguous_target, .-ambiguous_target\n");

void pause_before_ret(void);
void ambiguous_target(int);

/* pause; one register-only add; X: X's samples are the pause's (a one-cycle op retires with the stall).
 * pause; two of them; X: they stay (too far to tell). */
__attribute__((noinline)) void pause_then_alu(void)
{
	__asm__ __volatile__("pause\naddq %%rax, %%rdx\n.globl pc1_after\npc1_after:\n"
			     "pause\naddq %%rax, %%rdx\naddq $1, %%rax\n.globl pc2_after\npc2_after:\n"
			     "mfence\naddq %%rax, %%rdx\nnop\n.globl fcn_after\nfcn_after:\n"
			     "nop\n" ::: "rax", "rdx", "memory");
}

int main(int argc, char **argv)
{
	(void)argv;
	keep_going = argc > 5; /* never true in tests: the loops run zero times */
	loop_pause();
	pause_then_jump();
	rep_nop_spelling();
	fences();
	fence_then_nops();
	locked(argc);
	fence_forms();
	pause_before_ret();
	ambiguous_target(argc);
	pause_then_alu();
	return (int)(serializing() & 0) + counter * 0;
}

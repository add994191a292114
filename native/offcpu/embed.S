/* embed.S - the compiled BPF object inside pmuprof-offcpu (one file to install, no path to find). */
	.section .rodata
	.global offcpu_bpf_obj
	.global offcpu_bpf_obj_end
	.balign 8
offcpu_bpf_obj:
	.incbin OFFCPU_BPF_OBJ
offcpu_bpf_obj_end:
	.section .note.GNU-stack,"",@progbits

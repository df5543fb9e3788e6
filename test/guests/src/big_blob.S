# 2^18 pseudo-random words (1 MiB) from a 32-bit LCG, as initialized read-only data.
    .section .rodata.big_blob, "a"
    .p2align 2
    .globl big_blob
big_blob:
    .set    x, 12345
    .rept   262144
    .set    x, (x * 1103515245 + 12345) & 0xffffffff
    .word   x
    .endr
    .globl big_blob_words
big_blob_words:
    .word   262144

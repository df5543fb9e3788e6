# Entry point: set up the stack, run main, terminate with main's return value.
    .section .text.start, "ax"
    .globl _start
_start:
    li      sp, 0x00200400          # STACK_TOP
    mv      gp, zero
    call    main
    tail    zkvm_exit

# zkvm_exit(code): `terminate` takes its exit code as an immediate, so jump into a table
# holding one terminate instruction per exit code 0..255.
    .text
    .globl zkvm_exit
zkvm_exit:
    andi    a0, a0, 255
    slli    a0, a0, 2
    la      t0, exit_table
    add     t0, t0, a0
    jr      t0
    .p2align 2
exit_table:
    .set    code, 0
    .rept   256
    .word   0x0000000b | (code << 20)   # terminate <code>
    .set    code, code + 1
    .endr

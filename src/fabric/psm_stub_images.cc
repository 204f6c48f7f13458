// The PSM stand-ins (psm_stubs/*.c, built by this directory's CMakeLists.txt as shared
// objects without the C library), embedded whole for psm_stand_ins.cc.
__asm__(
    ".pushsection .rodata\n"
    ".balign 64\n"
    ".globl writ_psm_infinipath_image\n.hidden writ_psm_infinipath_image\n"
    ".globl writ_psm_infinipath_image_end\n.hidden writ_psm_infinipath_image_end\n"
    "writ_psm_infinipath_image:\n"
    ".incbin \"" WRIT_PSM_INFINIPATH_STUB
    "\"\n"
    "writ_psm_infinipath_image_end:\n"
    ".balign 64\n"
    ".globl writ_psm2_image\n.hidden writ_psm2_image\n"
    ".globl writ_psm2_image_end\n.hidden writ_psm2_image_end\n"
    "writ_psm2_image:\n"
    ".incbin \"" WRIT_PSM2_STUB
    "\"\n"
    "writ_psm2_image_end:\n"
    ".popsection\n");

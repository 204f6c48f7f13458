/* Stands for a libfabric built against a newer PSM2 than the stand-ins know: it imports
 * a psm2 function they do not export, and binds it at load (linked -z now), so it cannot
 * load while the stand-in libpsm2.so.2 meets its dependency. */
extern int psm2_am_register_handlers(void);

int (*writ_needs_newer_psm2(void))(void) { return psm2_am_register_handlers; }

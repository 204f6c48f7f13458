/* Imports only a psm2 function the stand-ins export: it loads with them. */
extern int psm2_init(void);

int (*writ_needs_known_psm2(void))(void) { return psm2_init; }

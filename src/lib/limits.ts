// Request caps shared by the route modules (README "Limits").

/** Caps on deferred child proofs (interface 8 leaves them to us; README "Limits"). */
export const MAX_CHILD_PROOFS = 16;
export const MAX_CHILD_PROOF_BYTES = 16 * 1024 * 1024;
/** Largest `input` JSON accepted, whether sent as the body or as a form field. */
export const MAX_INPUT_BYTES = 32 * 1024 * 1024;
/** Largest small JSON body (a project name, a program rename or move): 413 beyond it. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;
/** Largest JSON body from the fleet (a log chunk or a result of at most 1 MiB of text each, ...). */
export const MAX_INTERNAL_JSON_BYTES = 4 * 1024 * 1024;

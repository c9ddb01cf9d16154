"""The higher-order primitives: primitives whose parameters are closed jaxprs
(and the effect primitives beside them), one module each, with every rule.

| module | primitives | bound by |
|---|---|---|
| `jit` | `jit` | `fgrad.jit` |
| `checkpoint` | `checkpoint`, `checkpoint_tangent` | `fgrad.checkpoint`, `lax.scan(checkpoints=)` |
| `custom` | `custom_jvp_call`, `custom_vjp_call`, `custom_vjp_bwd` | `fgrad.custom_jvp`, `custom_vjp` |
| `cond` | `cond` | `lax.cond`, `switch` |
| `while_loop` | `while`, `while_tape`, `tape_scan` | `lax.while_loop`, `fori_loop` |
| `scan` | `scan` | `lax.scan`, `map`, `fori_loop` |
| `solves` | `custom_linear_solve`, `custom_root` | the `lax` functions of those names |
| `effects` | `debug_print`, `debug_callback`, `tap_grad`, `tap_cotangent` | `fgrad.debug` |

Every module writes its rules on the transforms' jaxpr-to-jaxpr functions
(`jvp_jaxpr`, `linearize_jaxpr`, `transpose_jaxpr`, `batch_jaxpr`). Reverse
mode follows one recipe: the body is linearized once, the same primitive is
bound on the known part now and staged on the linear part with the residuals
as operands, and the transpose is a rule of its own (a scan transposes to a
reverse scan; a while loop keeps a tape whose length is known at run time,
run backwards by `tape_scan`). `call.py` holds the rules shared by the
call-like primitives (`jit`, `checkpoint`), `_common.py` the carry fixpoint
and the other helpers, and `eager.py` runs custom functions on concrete
values where nothing is staged.

The package sits above the transforms and below the API: it never sees a
pytree. The public functions that flatten arguments and stage the user's
functions are in `fgrad/api/jit.py`, `fgrad/lax/`, `fgrad/custom_derivatives.py`
and `fgrad/debug.py`.
"""

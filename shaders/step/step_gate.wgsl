// The convergence test of the GPU time step, one invocation: at the check before iteration
// `span.count`, when the monitor's residual (of that iterate) meets the tolerance, the
// iterations stop: the indirect dispatch arguments of the iterations' kernels (bodies,
// blocks, single workgroup, rows: every third word a workgroup count) get no workgroups for
// the rest of the step, and the gate records the iterations done; it counts the tests run
// until then. A NaN residual does not meet it. With `span.keys` > 0 (the outer rounds of the
// Coulomb model, `solver::coulomb`'s stall rule) the iterations also stop, not converged,
// after that many tests in a row whose iterate did not improve on the best one.
// Mirror: `src/gpu/cpu/step.rs::step_gate`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<uniform> span: Span;
@group(0) @binding(2) var<storage, read> monitor: Monitor;
@group(0) @binding(3) var<storage, read_write> gate: StepGate;
@group(0) @binding(4) var<storage, read_write> args: array<u32>;

@compute @workgroup_size(256)
fn main(@builtin(local_invocation_id) lid: vec3<u32>) {
    let stall = span.keys > 0u;
    if lid.x != 0u || gate.converged == 1u || (stall && gate.stalled >= span.keys) {
        return;
    }
    gate.checks += 1u;
    if monitor.value <= params.tol {
        gate.converged = 1u;
    } else if stall {
        gate.stalled = select(gate.stalled + 1u, 0u, monitor.improved == 1u);
        if gate.stalled < span.keys {
            return;
        }
    } else {
        return;
    }
    gate.iterations = span.count;
    for (var i = 0u; i < arrayLength(&args); i += 3u) {
        args[i] = 0u;
    }
}

// Broad phase, one invocation per sphere: the grid cell of its center and the cell's hash
// bucket, the key of the counting sort; and the sphere's constants of the iterations
// (`step_gather`): 1/m and r^2/I. Mirror: `src/gpu/cpu/step.rs::step_grid`.

@group(0) @binding(0) var<uniform> params: StepParams;
@group(0) @binding(1) var<storage, read> bodies: array<GpuBody>;
@group(0) @binding(2) var<storage, read_write> cells: array<vec4<i32>>;
@group(0) @binding(3) var<storage, read_write> keys: array<u32>;
@group(0) @binding(4) var<storage, read_write> consts: array<vec2<f32>>;

@compute @workgroup_size(256)
fn main(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let i = flat_index(gid, nwg);
    if i >= params.n_bodies {
        return;
    }
    let b = bodies[i];
    let c = cell_of(b.pos.xyz, params.cell);
    cells[i] = vec4<i32>(c, 0);
    keys[i] = bucket_of(c, params.mask);
    consts[i] = vec2<f32>(b.inv.x, b.pos.w * b.pos.w * b.inv.y);
}

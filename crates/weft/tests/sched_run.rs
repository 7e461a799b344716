//! Running graphs through the scheduler: reserve then same-shaped graphs allocate nothing
//! new, n_copies = 2 computes what n_copies = 1 does (with the graph input alternating
//! between its two copy slots), the eval callback's calls in order with readable data and
//! early stop, and reads allowed only inside it. Reference values come from the plain CPU
//! backend computing the same graph (common/sched_net.rs).

mod common;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use common::fake_backends::{refuse_none, take_log, FakeGpu, LogCpu};
use common::sched_net::{sched, strs, Net};
use common::{get, rand_vec, set};
use weft::backend::cpu::CpuBufferType;
use weft::backend::sched::Scheduler;
use weft::backend::{tensor_get, tensor_set, tensor_to_f32, Backend, Buffer, BusyGuard};
use weft::{Error, ErrorKind, Tensor};

fn setup(n_copies: usize) -> (Arc<FakeGpu>, Arc<LogCpu>, Scheduler) {
    let (gpu, cpu) = (FakeGpu::new(refuse_none, true), LogCpu::new(refuse_none));
    let s = sched(vec![gpu.clone(), cpu.clone()], n_copies);
    (gpu, cpu, s)
}

fn net(gpu: &FakeGpu, n_tok: i64) -> Net {
    Net::placed(n_tok, CpuBufferType::get().as_ref(), gpu.device().buffer_type().as_ref())
}

fn same(a: &[Arc<dyn Buffer>], b: &[Arc<dyn Buffer>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| std::ptr::addr_eq(Arc::as_ptr(x), Arc::as_ptr(y)))
}

#[test]
fn reserve_then_same_shaped_graphs_allocate_nothing_new() {
    let (gpu, cpu, mut s) = setup(1);
    let (g_be, c_be): (Arc<dyn Backend>, Arc<dyn Backend>) = (gpu.clone(), cpu.clone());
    let measure = net(&gpu, 3);
    s.reserve(&measure.graph).unwrap();
    let sizes = (s.buffer_size(&g_be).unwrap(), s.buffer_size(&c_be).unwrap());
    let buffers = s.buffers();
    // CPU: x (48 bytes -> 64 at the 32-byte alignment), then mm (24 -> 32) beside it while
    // x is still read: 96. GPU (64-byte alignment): the copy of mm (24 -> 64), which h
    // (ADD), y (SQR) and out (SCALE) each take over in place: 64.
    assert_eq!(sizes, (64, 96));
    // No tensor was placed by reserve.
    assert!(!measure.mm.is_allocated() && !measure.x.is_allocated());
    for step in 0..3 {
        let n = net(&gpu, 3);
        s.alloc_graph(&n.graph).unwrap();
        let xv = rand_vec(12, 20 + step);
        set(&n.x, &xv);
        s.graph_compute(&n.graph).unwrap();
        assert_eq!(get(&n.out), Net::reference(3, &xv), "step {step}");
        assert_eq!((s.buffer_size(&g_be).unwrap(), s.buffer_size(&c_be).unwrap()), sizes, "step {step}");
        assert!(same(&s.buffers(), &buffers), "step {step}: new buffers");
    }
    // A bigger graph needs bigger buffers: they grow.
    let big = net(&gpu, 64);
    s.alloc_graph(&big.graph).unwrap();
    assert!(s.buffer_size(&c_be).unwrap() > sizes.1);
}

/// n_copies = 2: each compute places the graph input in the other of its two slots (so the
/// next input can be written while the last compute reads), events guard the copies, and
/// the numbers are those of n_copies = 1 and of the CPU.
#[test]
fn two_copies_compute_what_one_copy_does() {
    let (gpu1, _, mut one) = setup(1);
    let (gpu2, _, mut two) = setup(2);
    assert_eq!((one.n_copies(), two.n_copies()), (1, 2));
    let (n1, n2) = (net(&gpu1, 3), net(&gpu2, 3));
    let mut x_offsets = Vec::new();
    for step in 0..5 {
        let xv = rand_vec(12, 40 + step);
        for (s, n) in [(&mut one, &n1), (&mut two, &n2)] {
            s.alloc_graph(&n.graph).unwrap();
            set(&n.x, &xv);
            s.graph_compute(&n.graph).unwrap();
        }
        let want = Net::reference(3, &xv);
        assert_eq!(get(&n1.out), want, "step {step}, 1 copy");
        assert_eq!(get(&n2.out), want, "step {step}, 2 copies");
        x_offsets.push(n2.x.storage().unwrap().offset);
    }
    assert_ne!(x_offsets[0], x_offsets[1]);
    assert_eq!(x_offsets[0], x_offsets[2]);
    assert_eq!(x_offsets[1], x_offsets[3]);
    // The GPU split has an input (mm): an event recorded per compute, waited on per copy.
    let ev = gpu2.events();
    assert_eq!(ev.records.load(Ordering::Relaxed), 5);
    assert_eq!(ev.waits.load(Ordering::Relaxed), 5);
    assert_eq!(gpu1.events().records.load(Ordering::Relaxed), 0);
    // Computing the same graph again without allocating reuses the plan and its slot.
    let xv = rand_vec(12, 99);
    set(&n2.x, &xv);
    two.graph_compute(&n2.graph).unwrap();
    assert_eq!(get(&n2.out), Net::reference(3, &xv));
}

type Calls = Arc<Mutex<Vec<(String, bool)>>>;
type Seen = Arc<Mutex<Vec<(String, Vec<f32>)>>>;

/// The callback is asked about every node in order (views too), called after each wanted
/// one with its data readable, and stops the compute when it says false.
#[test]
fn eval_callback_sees_every_node_in_order() {
    let (gpu, cpu, mut s) = setup(1);
    let n = net(&gpu, 3);
    let calls: Calls = Arc::default();
    let seen: Seen = Arc::default();
    let (c, v) = (calls.clone(), seen.clone());
    s.set_eval_callback(Some(Box::new(move |t: &Tensor, ask: bool| {
        c.lock().unwrap().push((t.name(), ask));
        if ask {
            return Ok(t.name() == "h" || t.name() == "out");
        }
        v.lock().unwrap().push((t.name(), tensor_to_f32(t)?));
        Ok(true)
    })));
    s.alloc_graph(&n.graph).unwrap();
    let xv = rand_vec(12, 50);
    set(&n.x, &xv);
    // Hold the buffers as the binding does: reads then work only inside the callback.
    let guard = BusyGuard::for_tensors(&s.busy_tensors()).unwrap();
    s.graph_compute(&n.graph).unwrap();
    drop(guard);
    // Split 0 (CPU): mm not wanted. Split 1 (GPU): h wanted -> computed, shown; y not
    // wanted, out wanted -> y and out computed together, out shown.
    let want_calls = [("mm", true), ("h", true), ("h", false), ("y", true), ("out", true), ("out", false)];
    let got: Vec<(String, bool)> = calls.lock().unwrap().clone();
    assert_eq!(got, want_calls.iter().map(|(a, b)| (a.to_string(), *b)).collect::<Vec<_>>());
    // The data shown is the reference's: out exactly; h = 2 * out's square root of twice...
    // simplest is out itself, and h from its own reference formula.
    let want_out = Net::reference(3, &xv);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen[1], ("out".to_string(), want_out.clone()));
    let h = &seen[0].1;
    let h_sq_half: Vec<f32> = h.iter().map(|v| v * v * 0.5).collect();
    assert_eq!(h_sq_half, want_out);
    assert_eq!(take_log(&cpu.log), strs(&["mm"]));
    assert_eq!(take_log(&gpu.log), strs(&["h", "y", "out"]));

    // Stop after h: y and out never run.
    let n2 = net(&gpu, 3);
    s.set_eval_callback(Some(Box::new(|t: &Tensor, ask: bool| Ok(ask || t.name() != "h"))));
    s.alloc_graph(&n2.graph).unwrap();
    set(&n2.x, &xv);
    s.graph_compute(&n2.graph).unwrap();
    assert_eq!(take_log(&gpu.log), strs(&["h"]));
    assert_eq!(take_log(&cpu.log), strs(&["mm"]));

    // An error from the callback is the compute's error.
    s.set_eval_callback(Some(Box::new(
        |_: &Tensor, ask: bool| {
            if ask {
                Ok(true)
            } else {
                Err(Error::invalid("callback says no"))
            }
        },
    )));
    let e = s.graph_compute(&n2.graph).unwrap_err();
    assert_eq!(e.message, "callback says no");
    assert_eq!(take_log(&cpu.log), strs(&["mm"]));
    assert!(take_log(&gpu.log).is_empty());
}

/// While a compute holds the buffers, the tensor the callback is shown (and its sources)
/// can be read inside the call; other tensors, writes, and reads after the call cannot.
#[test]
fn reads_are_allowed_only_inside_the_callback() {
    let (gpu, _cpu, mut s) = setup(1);
    let n = net(&gpu, 3);
    let (x, w, out) = (n.x.clone(), n.w.clone(), n.out.clone());
    let results: Arc<Mutex<Vec<(String, ErrorKind)>>> = Arc::default();
    let r = results.clone();
    let mut buf = vec![0u8; 8];
    s.set_eval_callback(Some(Box::new(move |t: &Tensor, ask: bool| {
        if ask {
            return Ok(t.name() == "mm");
        }
        let mut b = vec![0u8; t.nbytes()];
        tensor_get(t, &mut b, 0)?; // the node itself
        let n = w.nbytes().min(b.len());
        tensor_get(&w, &mut b[..n], 0)?; // its source
        let mut out_b = vec![0u8; out.nbytes()];
        let kind = |res: weft::Result<()>| res.err().map(|e| e.kind).unwrap_or(ErrorKind::InvalidArgument);
        r.lock().unwrap().push(("out".into(), kind(tensor_get(&out, &mut out_b, 0))));
        r.lock().unwrap().push(("write".into(), kind(tensor_set(t, &b, 0))));
        Ok(true)
    })));
    s.alloc_graph(&n.graph).unwrap();
    set(&x, &rand_vec(12, 60));
    let guard = BusyGuard::for_tensors(&s.busy_tensors()).unwrap();
    s.graph_compute(&n.graph).unwrap();
    // Outside the callback, the guard still holds: reads are refused again.
    assert_eq!(tensor_get(&n.mm, &mut buf, 0).unwrap_err().kind, ErrorKind::Busy);
    drop(guard);
    assert!(tensor_get(&n.mm, &mut buf, 0).is_ok());
    let results = results.lock().unwrap().clone();
    assert_eq!(results, vec![("out".into(), ErrorKind::Busy), ("write".into(), ErrorKind::Busy)]);
}

//! How the costs that grow with a run's size grow: the workload, the article's model, signing
//! every event's delivery, and the checker's counting, each at 10,000, 100,000 and 1,000,000
//! events (`cargo bench -p hookbench --bench scaling`; docs/performance.md states the growth).
//!
//! The checker is fed by an observer that answers from memory what a database would (every
//! credit applied once, every account on its latest plan): what is timed is its counting, not a
//! database's reading.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use hookbench::checker;
use hookbench::model::ModelReport;
use hookbench::observer::{Observer, TablesError};
use hookbench::wire::Wire;
use hookbench::workload::{Workload, WorkloadConfig};
use receivers::signature::Secret;

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

fn config(events: usize) -> WorkloadConfig {
    WorkloadConfig { events, ..WorkloadConfig::default() }
}

/// What a database would hold after a perfect run of `workload`.
struct Perfect<'a>(&'a Workload);

impl Observer for Perfect<'_> {
    async fn applies(&self, f: &mut (dyn FnMut(&str, u64) + Send)) -> Result<(), TablesError> {
        for e in self.0.events.iter().filter(|e| e.is_credit()) {
            f(&e.id().to_string(), 1);
        }
        Ok(())
    }

    async fn plan_versions(&self, f: &mut (dyn FnMut(i64, i64) + Send)) -> Result<(), TablesError> {
        for (account, &v) in self.0.latest_plan.iter().enumerate() {
            f(account as i64, i64::from(v));
        }
        Ok(())
    }

    async fn plan_changes(&self, _: &mut (dyn FnMut(i64, i64, i64, i64) + Send)) -> Result<(), TablesError> {
        Ok(())
    }

    async fn stale_writes(&self) -> Result<u64, TablesError> {
        Ok(0)
    }

    async fn credits_total(&self) -> Result<i64, TablesError> {
        Ok(self.0.expected_ledger())
    }

    async fn ledger_total(&self) -> Result<i64, TablesError> {
        Ok(self.0.expected_ledger())
    }

    async fn dead_letters(&self) -> Result<u64, TablesError> {
        Ok(0)
    }

    async fn id_conflicts(&self) -> Result<u64, TablesError> {
        Ok(0)
    }

    async fn pending(&self) -> Result<u64, TablesError> {
        Ok(0)
    }
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let wire = Wire::hookbench(&Secret::from_bytes(b"hookbench-bench".to_vec()));
    for n in SIZES {
        group.throughput(Throughput::Elements(n as u64));
        let config = config(n);
        group.bench_with_input(BenchmarkId::new("workload", n), &config, |b, c| {
            b.iter(|| Workload::generate(black_box(c)).expect("valid"))
        });
        group.bench_with_input(BenchmarkId::new("model", n), &config, |b, c| {
            b.iter(|| ModelReport::run(black_box(c)).expect("valid"))
        });
        let workload = Workload::generate(&config).expect("valid");
        group.bench_with_input(BenchmarkId::new("sign every event", n), &workload, |b, w| {
            b.iter(|| {
                for i in 0..w.events.len() {
                    let fields = wire.fields(w, i);
                    black_box(wire.attempt(&fields, 1_790_000_000));
                }
            })
        });
        group.bench_with_input(BenchmarkId::new("checker", n), &workload, |b, w| {
            b.iter(|| runtime.block_on(checker::check(&Perfect(w), w)).expect("checked"))
        });
    }
    group.finish();
}

criterion_group!(benches, scaling);
criterion_main!(benches);

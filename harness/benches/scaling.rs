//! How the costs that grow with a run's size grow: the workload, the article's model, signing
//! every event's delivery, and the judge (its history built, the evidence gathered, the verdict
//! reached), each at 10,000, 100,000 and 1,000,000 events (`cargo bench -p hookbench --bench
//! scaling`; docs/performance.md states the growth).
//!
//! The judge is fed by an observer that answers from memory what a database would (every credit
//! applied once, every account on its latest plan): what is timed is its judging, not a
//! database's reading.

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use futures_util::future::BoxFuture;
use hookbench::judge::{Answers, Ledger, Rules, judge};
use hookbench::load;
use hookbench::model::ModelReport;
use hookbench::observe::{Gather, ObserveError, Observer, Observers, Record, Sees};
use hookbench::wire::Wire;
use hookbench::workload::{Workload, WorkloadConfig};

const SIZES: [usize; 3] = [10_000, 100_000, 1_000_000];

fn config(events: usize) -> WorkloadConfig {
    WorkloadConfig { events, ..WorkloadConfig::default() }
}

/// What a database would hold after a perfect run of `workload`.
struct Perfect(std::sync::Arc<Workload>);

impl Observer for Perfect {
    fn name(&self) -> &'static str {
        "perfect"
    }

    fn sees(&self) -> Sees {
        Sees {
            applies: true,
            states: true,
            dead_letters: true,
            changes: true,
            ledger: true,
            id_conflicts: true,
            update_applies: false,
            recorded_applies: true,
            aggregates: false,
        }
    }

    fn look<'a>(&'a self, into: &'a mut dyn Record) -> BoxFuture<'a, Result<(), ObserveError>> {
        Box::pin(async move {
            for e in self.0.events.iter().filter(|e| e.is_credit()) {
                into.applied("perfect", &e.id().to_string(), 1);
            }
            for (account, &v) in self.0.latest_plan.iter().enumerate() {
                into.state(account as i64, i64::from(v));
            }
            let total = self.0.expected_ledger();
            into.ledger(Ledger { balances: total, rows: total });
            into.id_conflicts(0);
            Ok(())
        })
    }
}

/// Every event acknowledged on its first attempt.
fn acked(_: usize) -> Answers {
    Answers { attempts: 1, acked: true, last_status: Some(200), ..Answers::default() }
}

fn scaling(c: &mut Criterion) {
    let mut group = c.benchmark_group("scaling");
    group.sample_size(10);
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("a runtime");
    let wire = Wire::hookbench("whsec_aG9va2JlbmNoLWJlbmNo").expect("a secret");
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
        let shared = std::sync::Arc::new(workload.clone());
        group.bench_with_input(BenchmarkId::new("judge", n), &workload, |b, w| {
            b.iter(|| {
                let history = load::history(w, "", |i| i64::from(w.events[i].account), acked);
                let mut gather = Gather::new(&history);
                let observers = Observers::new(vec![Box::new(Perfect(shared.clone()))]);
                runtime.block_on(observers.look(&mut gather)).expect("observed");
                let verdict = judge(&history, &gather.evidence, &Rules::strict());
                assert!(verdict.passed(), "{}", hookbench::report::verdict_summary(&verdict));
            })
        });
    }
    group.finish();
}

criterion_group!(benches, scaling);
criterion_main!(benches);

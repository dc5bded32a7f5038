//! How long the article's workload and model take: `cargo bench -p hookbench --bench model`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use hookbench::model::ModelReport;
use hookbench::workload::{Workload, WorkloadConfig};

fn model(c: &mut Criterion) {
    let config = WorkloadConfig::default();
    c.bench_function("workload, 10,000 events", |b| {
        b.iter(|| Workload::generate(black_box(&config)).expect("valid"))
    });
    c.bench_function("model, 10,000 events (every table)", |b| {
        b.iter(|| ModelReport::run(black_box(&config)).expect("valid"))
    });
    let big = WorkloadConfig { events: 1_000_000, ..WorkloadConfig::default() };
    let mut group = c.benchmark_group("large");
    group.sample_size(10);
    group.bench_function("workload, 1,000,000 events", |b| {
        b.iter(|| Workload::generate(black_box(&big)).expect("valid"))
    });
    group.finish();
}

criterion_group!(benches, model);
criterion_main!(benches);

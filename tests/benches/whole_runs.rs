//! What the benchmarks that time whole processes (`hostile`, `image`) share: the median of a
//! few runs, and the machine they ran on, said beside every figure.

/// The middle value of a few runs (the upper middle of an even count).
pub fn median<T: Ord>(mut values: Vec<T>) -> T {
    values.sort_unstable();
    values.swap_remove(values.len() / 2)
}

/// The machine, as the figures are reported: its cores and its CPU.
pub fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| t.lines().find_map(|l| l.strip_prefix("model name")).map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned()));
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{} core(s), {}", cores, cpu.unwrap_or_else(|| String::from("unknown CPU")))
}

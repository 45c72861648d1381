use mpsim::report_column::Column;
use mpsim::testbed::*;
fn main() {
    let mut d = Dumbbell::new(1, 10_000_000, 20.0, 1000);
    d.loss = bernoulli(0.0005);
    d.delayed_ack = false;
    d.duration_s = 100.0;
    let (sim, s) = run(&d.spec()).unwrap();
    println!("{}", s["flows"]["f0"]);
    println!("{}", s["links"]["bottleneck"]);
    for (name, t) in sim.traces() {
        if name != "subflows" { continue; }
        let get = |n: &str| t.columns.iter().find(|(c, _)| c == n).unwrap().1.clone();
        if let (Column::F64(time), Column::F64(cw), Column::F64(ss), Column::F64(rtt), Column::I64(rx)) = (get("time_s"), get("cwnd_bytes"), get("ssthresh_bytes"), get("srtt_s"), get("retransmissions")) {
            for i in 0..time.len() { println!("{:.0} cwnd {:.1} ss {:.1} srtt {:.3} retx {}", time[i], cw[i]/1448.0, ss[i]/1448.0, rtt[i], rx[i]); }
        }
    }
}

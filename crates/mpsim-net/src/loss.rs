//! Per-packet loss on a link direction: none, independent (Bernoulli) or
//! bursty (Gilbert-Elliott two-state chain).

use mpsim_core::SimRng;

#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum LossModel {
    #[default]
    None,
    /// Each packet lost independently with probability `p_frac`.
    Bernoulli { p_frac: f64 },
    /// Two-state chain; the state decides the loss probability of a packet,
    /// then moves (good->bad with `p_good_bad`, bad->good with `p_bad_good`).
    Gilbert { p_good_bad: f64, p_bad_good: f64, loss_good: f64, loss_bad: f64, bad: bool },
}

impl LossModel {
    /// Draws the fate of one packet: true if it is lost.
    pub fn lose(&mut self, rng: &mut SimRng) -> bool {
        match self {
            LossModel::None => false,
            LossModel::Bernoulli { p_frac } => rng.bernoulli(*p_frac),
            LossModel::Gilbert { p_good_bad, p_bad_good, loss_good, loss_bad, bad } => {
                let lost = rng.bernoulli(if *bad { *loss_bad } else { *loss_good });
                let flip = if *bad { *p_bad_good } else { *p_good_bad };
                if rng.bernoulli(flip) {
                    *bad = !*bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gilbert_losses_come_in_bursts() {
        let mut m = LossModel::Gilbert { p_good_bad: 0.01, p_bad_good: 0.2, loss_good: 0.0, loss_bad: 1.0, bad: false };
        let mut rng = SimRng::new(1, 1);
        let fates: Vec<bool> = (0..100_000).map(|_| m.lose(&mut rng)).collect();
        let losses = fates.iter().filter(|&&l| l).count();
        // Stationary bad fraction 0.01 / 0.21 ~ 4.8 %; mean burst 5 packets.
        assert!((3_500..6_000).contains(&losses), "{losses}");
        let bursts = fates.windows(2).filter(|w| !w[0] && w[1]).count();
        let mean_burst = losses as f64 / bursts as f64;
        assert!(mean_burst > 3.5 && mean_burst < 6.5, "{mean_burst}");
    }

    #[test]
    fn no_loss_model_never_loses() {
        let mut rng = SimRng::new(1, 1);
        assert!(!(0..1000).any(|_| LossModel::None.lose(&mut rng)));
    }
}

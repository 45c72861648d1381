//! Controller parameters a scenario sets (`cc_params`). They travel with
//! the controller's name as one string, `name` or `name:key=value,...`
//! (e.g. `vegas:alpha=1,beta=3`), so that every transport that builds a
//! controller from a name builds it with its parameters too.

use crate::CcError;

/// The `key=value` pairs of a controller spec, consumed key by key by the
/// controller that owns them; whatever is left over is an error.
pub(crate) struct Params<'a> {
    cc: &'a str,
    pairs: Vec<(&'a str, f64)>,
}

/// Splits `spec` into the controller name and its parameters.
pub(crate) fn split_spec(spec: &str) -> Result<(&str, Params<'_>), CcError> {
    let Some((name, rest)) = spec.split_once(':') else {
        return Ok((spec, Params { cc: spec, pairs: Vec::new() }));
    };
    let mut pairs = Vec::new();
    for item in rest.split(',').filter(|s| !s.is_empty()) {
        let (key, value) = item.split_once('=').ok_or_else(|| bad(name, item, "expected key=value"))?;
        let key = key.trim();
        let value: f64 = value.trim().parse().map_err(|_| bad(name, key, &format!("'{value}' is not a number")))?;
        if pairs.iter().any(|&(k, _)| k == key) {
            return Err(bad(name, key, "given twice"));
        }
        pairs.push((key, value));
    }
    Ok((name, Params { cc: name, pairs }))
}

fn bad(cc: &str, key: &str, message: &str) -> CcError {
    CcError::BadParam { cc: cc.to_string(), key: key.to_string(), message: message.to_string() }
}

impl Params<'_> {
    /// The value of `key` (removed from the pairs), if given; it must be a
    /// finite number of at least the key's minimum in [`crate::CC_PARAMS`].
    pub(crate) fn take(&mut self, key: &str) -> Result<Option<f64>, CcError> {
        let min = crate::param_defs(self.cc).iter().find(|d| d.key == key).map_or(f64::NEG_INFINITY, |d| d.min);
        let Some(i) = self.pairs.iter().position(|&(k, _)| k == key) else { return Ok(None) };
        let (_, value) = self.pairs.remove(i);
        if !value.is_finite() || value < min {
            return Err(self.error(key, &format!("must be a number of at least {min}, got {value}")));
        }
        Ok(Some(value))
    }

    /// An error about `key`'s value.
    pub(crate) fn error(&self, key: &str, message: &str) -> CcError {
        bad(self.cc, key, message)
    }

    /// Fails on the first key no controller took: `allowed` lists the keys
    /// this controller has.
    pub(crate) fn finish(self, allowed: &[&str]) -> Result<(), CcError> {
        let Some(&(key, _)) = self.pairs.first() else { return Ok(()) };
        let message = if allowed.is_empty() {
            "this congestion control takes no parameters".to_string()
        } else {
            format!("not a parameter of this congestion control (it has {})", allowed.join(", "))
        };
        Err(bad(self.cc, key, &message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_name_has_no_parameters() {
        let (name, p) = split_spec("lia").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(name, "lia");
        assert!(p.finish(&[]).is_ok());
    }

    #[test]
    fn pairs_are_parsed_and_taken() {
        let (name, mut p) = split_spec("vegas:alpha=1,beta=3.5").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(name, "vegas");
        assert_eq!(p.take("beta"), Ok(Some(3.5)));
        assert_eq!(p.take("gamma"), Ok(None));
        assert_eq!(p.take("alpha"), Ok(Some(1.0)));
        assert!(p.finish(&["alpha", "beta", "gamma"]).is_ok());
    }

    #[test]
    fn leftover_bad_and_repeated_keys_are_errors_naming_the_key() {
        let (_, p) = split_spec("reno:alpha=1").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(p.finish(&[]), Err(CcError::BadParam { key, .. }) if key == "alpha"));
        let (_, mut p) = split_spec("balia:ssthresh_floor=0.5").unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(p.take("ssthresh_floor"), Err(CcError::BadParam { key, .. }) if key == "ssthresh_floor"));
        assert!(matches!(split_spec("vegas:alpha=x"), Err(CcError::BadParam { key, .. }) if key == "alpha"));
        assert!(matches!(split_spec("vegas:alpha=1,alpha=2"), Err(CcError::BadParam { key, .. }) if key == "alpha"));
        assert!(matches!(split_spec("vegas:alpha"), Err(CcError::BadParam { .. })));
        let (_, mut p) = split_spec("vegas:alpha=inf").unwrap_or_else(|e| panic!("{e}"));
        assert!(p.take("alpha").is_err());
    }
}

//! Record ids: the one place a fresh one is made.

use super::StoreError;

/// A fresh record id: "r_" and 20 hex digits (80 random bits).
pub fn new_record_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 10];
    getrandom::fill(&mut bytes).map_err(|error| StoreError::Random(error.to_string()))?;
    Ok(format!("r_{}", hex::encode(bytes)))
}

//! The variants of the binding's string enums, so that an unknown string can be answered
//! with the list of valid ones. The binding registers each enum when the addon loads.

use std::sync::RwLock;

static ENUMS: RwLock<Vec<(&'static str, &'static [&'static str])>> = RwLock::new(Vec::new());

/// Record the JS values of string enum `name` (its TypeScript name, e.g. `GgmlType`).
pub fn register_string_enum(name: &'static str, values: &'static [&'static str]) {
    let mut enums = ENUMS.write().unwrap_or_else(|e| e.into_inner());
    if !enums.iter().any(|(n, _)| *n == name) {
        enums.push((name, values));
    }
}

/// "'f32', 'f16', ..." for a registered enum.
pub(crate) fn values_of(name: &str) -> Option<String> {
    let enums = ENUMS.read().unwrap_or_else(|e| e.into_inner());
    let (_, values) = enums.iter().find(|(n, _)| *n == name)?;
    Some(values.iter().map(|v| format!("'{v}'")).collect::<Vec<_>>().join(", "))
}

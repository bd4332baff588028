//! `mocca emit --fmu`: the emitted crate as an FMI 2.0 co-simulation FMU. The crate gains
//! `src/fmi2.rs` (the C API over its `Simulation`) and a `cdylib`; this module writes the
//! `modelDescription.xml` that names its variables by value reference, and packs the FMU: a
//! zip archive of the description, `binaries/linux64/<id>.so` and the crate under `sources/`.

use std::fmt::Write as _;

use crate::causal::Point;
use crate::dae::{Dae, ScalarType, VarKind};
use crate::expr::VarId;

const FMI2: &str = include_str!("template/fmi2.rs");

/// The crate's files made an FMU's: `src/fmi2.rs` added (offering Model Exchange with
/// `model_exchange`), `lib.rs` declaring it, and a `cdylib` beside the library.
pub fn make_fmu_crate(files: &mut Vec<(String, String)>, model_exchange: bool) {
    for (path, text) in files.iter_mut() {
        match path.as_str() {
            "Cargo.toml" => {
                *text = text.replace(
                    "path = \"src/lib.rs\"\n",
                    "path = \"src/lib.rs\"\ncrate-type = [\"rlib\", \"cdylib\"]\n",
                );
            }
            "src/lib.rs" => text.push_str("\npub mod fmi2;\n"),
            _ => {}
        }
    }
    let fmi2 = FMI2.replace(
        "const MODEL_EXCHANGE: bool = false;",
        &format!("const MODEL_EXCHANGE: bool = {model_exchange};"),
    );
    files.push(("src/fmi2.rs".to_string(), fmi2));
    files.sort_by(|a, b| a.0.cmp(&b.0));
}

/// What the model description says of the model: its flat DAE, its states, the point its
/// parameters and inputs take their start values at, and the variables that are outputs.
#[derive(Clone, Copy)]
pub struct Facts<'a> {
    pub dae: &'a Dae,
    pub states: &'a [VarId],
    pub start: &'a Point,
    pub outputs: &'a [VarId],
}

/// The FMU's `modelDescription.xml`: the model's Real variables (value reference: the index
/// in the crate's `model::VARIABLES`, the non-alias variables in order) with their units,
/// its Real parameters (tunable where the translation did not use their values) and its
/// top-level inputs with their values at `start`, its `outputs`.
pub fn model_description(
    Facts {
        dae,
        states,
        start,
        outputs,
    }: Facts<'_>,
    identifier: &str,
    guid: &str,
    grid: (f64, f64, f64),
    model_exchange: bool,
) -> String {
    let mut xml = String::new();
    let _ = writeln!(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        xml,
        "<fmiModelDescription fmiVersion=\"2.0\" modelName=\"{}\" guid=\"{guid}\" \
         generationTool=\"mocca\" variableNamingConvention=\"flat\" \
         numberOfEventIndicators=\"{}\">",
        escape(&dae.model),
        super::model::event_indicators(dae)
    );
    if model_exchange {
        let _ = writeln!(xml, "  <ModelExchange modelIdentifier=\"{identifier}\"/>");
    }
    let _ = writeln!(
        xml,
        "  <CoSimulation modelIdentifier=\"{identifier}\" \
         canHandleVariableCommunicationStepSize=\"true\"/>"
    );
    let listed: Vec<VarId> = (dae.var_ids())
        .filter(|&v| dae.var(v).kind != VarKind::Alias)
        .collect();
    let unit_of = |v: VarId| {
        let var = dae.var(v);
        (var.unit.as_deref()).filter(|u| var.ty == ScalarType::Real && !u.is_empty())
    };
    let units: std::collections::BTreeSet<&str> =
        listed.iter().filter_map(|&v| unit_of(v)).collect();
    if !units.is_empty() {
        let _ = writeln!(xml, "  <UnitDefinitions>");
        for unit in &units {
            let _ = writeln!(xml, "    <Unit name=\"{}\"/>", escape(unit));
        }
        let _ = writeln!(xml, "  </UnitDefinitions>");
    }
    let _ = writeln!(
        xml,
        "  <DefaultExperiment startTime=\"{}\" stopTime=\"{}\" stepSize=\"{}\"/>",
        grid.0, grid.1, grid.2
    );
    let _ = writeln!(xml, "  <ModelVariables>");
    // 1-based positions in the list, as `ModelStructure` refers to variables.
    let mut written = 0usize;
    let mut position_of_state = vec![0usize; states.len()];
    let mut output_positions = Vec::new();
    for (reference, &v) in listed.iter().enumerate() {
        let var = dae.var(v);
        if var.ty != ScalarType::Real {
            continue;
        }
        written += 1;
        if let Some(i) = states.iter().position(|&s| s == v) {
            position_of_state[i] = written;
        }
        let output = outputs.contains(&v);
        if output {
            output_positions.push(written);
        }
        let (attributes, value) = match var.kind {
            _ if output => ("causality=\"output\" variability=\"continuous\"", None),
            VarKind::Input => (
                "causality=\"input\" variability=\"continuous\"",
                Some(start.vars[v.0 as usize]),
            ),
            VarKind::Parameter if super::model::tunable(dae, v) => (
                "causality=\"parameter\" variability=\"tunable\" initial=\"exact\"",
                Some(start.vars[v.0 as usize]),
            ),
            VarKind::Parameter => (
                "causality=\"parameter\" variability=\"fixed\" initial=\"exact\"",
                Some(start.vars[v.0 as usize]),
            ),
            VarKind::Constant => (
                "causality=\"local\" variability=\"constant\" initial=\"exact\"",
                Some(start.vars[v.0 as usize]),
            ),
            VarKind::Discrete => ("causality=\"local\" variability=\"discrete\"", None),
            _ => ("causality=\"local\" variability=\"continuous\"", None),
        };
        let description = var
            .description
            .as_deref()
            .map(|d| format!(" description=\"{}\"", escape(d)))
            .unwrap_or_default();
        let _ = writeln!(
            xml,
            "    <ScalarVariable name=\"{}\" valueReference=\"{reference}\" {attributes}{description}>",
            escape(&var.name)
        );
        let unit = unit_of(v)
            .map(|u| format!(" unit=\"{}\"", escape(u)))
            .unwrap_or_default();
        match value {
            Some(x) => {
                let _ = writeln!(xml, "      <Real{unit} start=\"{x:e}\"/>");
            }
            None => {
                let _ = writeln!(xml, "      <Real{unit}/>");
            }
        }
        let _ = writeln!(xml, "    </ScalarVariable>");
    }
    let mut derivatives = Vec::new();
    for (i, &v) in states.iter().enumerate() {
        written += 1;
        derivatives.push(written);
        let _ = writeln!(
            xml,
            "    <ScalarVariable name=\"der({})\" valueReference=\"{}\" \
             causality=\"local\" variability=\"continuous\">",
            escape(&dae.var(v).name),
            listed.len() + i
        );
        let _ = writeln!(xml, "      <Real derivative=\"{}\"/>", position_of_state[i]);
        let _ = writeln!(xml, "    </ScalarVariable>");
    }
    let _ = writeln!(xml, "  </ModelVariables>");
    let _ = writeln!(xml, "  <ModelStructure>");
    let unknowns = |xml: &mut String, tag: &str, indices: &[usize]| {
        let _ = writeln!(xml, "    <{tag}>");
        for index in indices {
            let _ = writeln!(xml, "      <Unknown index=\"{index}\"/>");
        }
        let _ = writeln!(xml, "    </{tag}>");
    };
    if !output_positions.is_empty() {
        unknowns(&mut xml, "Outputs", &output_positions);
    }
    if !derivatives.is_empty() {
        unknowns(&mut xml, "Derivatives", &derivatives);
    }
    let mut initial: Vec<usize> = position_of_state.clone();
    initial.extend(&derivatives);
    initial.extend(&output_positions);
    initial.sort_unstable();
    initial.dedup();
    if !initial.is_empty() {
        unknowns(&mut xml, "InitialUnknowns", &initial);
    }
    let _ = writeln!(xml, "  </ModelStructure>");
    let _ = writeln!(xml, "</fmiModelDescription>");
    xml
}

/// The FMU's GUID: a hash of the generated model, so one model's FMUs share it.
pub fn guid(model_rs: &str) -> String {
    let h = super::fnv1a(model_rs.as_bytes());
    format!(
        "{{{:08x}-{:04x}-{:04x}-{:04x}-{:012x}}}",
        h >> 32,
        (h >> 16) & 0xffff,
        h & 0xffff,
        (h >> 48) & 0xffff,
        h & 0xffff_ffff_ffff
    )
}

pub(super) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

/// A zip archive of `entries` (path, bytes), stored without compression: what an FMU is.
pub fn zip(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for (path, bytes) in entries {
        let offset = out.len() as u32;
        let crc = crc32(bytes);
        let size = bytes.len() as u32;
        let name = path.as_bytes();
        // Local file header: version 2.0, no flags, stored, no date.
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&[20, 0, 0, 0, 0, 0, 0, 0, 0x21, 0]);
        out.extend_from_slice(&crc.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name);
        out.extend_from_slice(bytes);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&[20, 3, 20, 0, 0, 0, 0, 0, 0, 0, 0x21, 0]);
        central.extend_from_slice(&crc.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&(name.len() as u16).to_le_bytes());
        // Extra, comment, disk, internal attributes.
        central.extend_from_slice(&[0; 8]);
        // External attributes: a regular file readable by all (Unix mode 0644 << 16).
        central.extend_from_slice(&(0o100_644u32 << 16).to_le_bytes());
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name);
    }
    let start = out.len() as u32;
    let count = entries.len() as u16;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&start.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// CRC-32 (IEEE 802.3, reflected), as zip checks its entries.
fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            let mask = (crc & 1).wrapping_neg();
            crc = (crc >> 1) ^ (0xEDB8_8320 & mask);
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc32_of_the_check_string_is_the_standards() {
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    }
}

//! `mocca emit --partition weak --fmu DIR`: the weak subsystems as a system of FMUs in an SSP
//! 1.0 archive that a co-simulation master runs. `SystemStructure.ssd` names each subsystem's
//! FMU (under `resources/`) with its inputs and outputs as connectors, and connects every
//! input to the output of the same name; `resources/parameters.ssv` holds the parameter
//! values, bound at the system, so that each is named `component.parameter`.

use std::fmt::Write as _;

use super::fmu::escape;

/// One subsystem's FMU in the system.
pub struct Component<'a> {
    pub name: &'a str,
    /// The FMU's path inside the archive.
    pub source: String,
    pub inputs: &'a [String],
    pub outputs: &'a [String],
}

/// Where the parameter values are, inside the archive.
pub const PARAMETERS: &str = "resources/parameters.ssv";

/// `SystemStructure.ssd` of system `model`: its components, every input connected to the
/// component whose output has its name, the default experiment `grid` (start, stop, step).
pub fn system_structure(model: &str, components: &[Component<'_>], grid: (f64, f64)) -> String {
    let mut xml = String::new();
    let _ = writeln!(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        xml,
        "<ssd:SystemStructureDescription \
         xmlns:ssc=\"http://ssp-standard.org/SSP1/SystemStructureCommon\" \
         xmlns:ssd=\"http://ssp-standard.org/SSP1/SystemStructureDescription\" \
         version=\"1.0\" name=\"{}\" generationTool=\"mocca\">",
        escape(model)
    );
    let _ = writeln!(xml, "  <ssd:System name=\"{}\">", escape(model));
    let _ = writeln!(xml, "    <ssd:ParameterBindings>");
    let _ = writeln!(xml, "      <ssd:ParameterBinding source=\"{PARAMETERS}\"/>");
    let _ = writeln!(xml, "    </ssd:ParameterBindings>");
    let _ = writeln!(xml, "    <ssd:Elements>");
    for c in components {
        let _ = writeln!(
            xml,
            "      <ssd:Component name=\"{}\" type=\"application/x-fmu-sharedlibrary\" source=\"{}\">",
            escape(c.name),
            escape(&c.source)
        );
        let connectors: Vec<(&String, &str)> = (c.inputs.iter().map(|n| (n, "input")))
            .chain(c.outputs.iter().map(|n| (n, "output")))
            .collect();
        if connectors.is_empty() {
            let _ = writeln!(xml, "      </ssd:Component>");
            continue;
        }
        let _ = writeln!(xml, "        <ssd:Connectors>");
        for (name, kind) in connectors {
            let _ = writeln!(
                xml,
                "          <ssd:Connector name=\"{}\" kind=\"{kind}\"><ssc:Real/></ssd:Connector>",
                escape(name)
            );
        }
        let _ = writeln!(xml, "        </ssd:Connectors>");
        let _ = writeln!(xml, "      </ssd:Component>");
    }
    let _ = writeln!(xml, "    </ssd:Elements>");
    let connections: Vec<(&str, &str, &str)> = components
        .iter()
        .flat_map(|to| to.inputs.iter().map(move |input| (to, input)))
        .filter_map(|(to, input)| {
            let from = components.iter().find(|c| c.outputs.contains(input))?;
            Some((from.name, input.as_str(), to.name))
        })
        .collect();
    if !connections.is_empty() {
        let _ = writeln!(xml, "    <ssd:Connections>");
        for (from, name, to) in connections {
            let _ = writeln!(
                xml,
                "      <ssd:Connection startElement=\"{}\" startConnector=\"{}\" \
                 endElement=\"{}\" endConnector=\"{}\"/>",
                escape(from),
                escape(name),
                escape(to),
                escape(name)
            );
        }
        let _ = writeln!(xml, "    </ssd:Connections>");
    }
    let _ = writeln!(xml, "  </ssd:System>");
    let _ = writeln!(
        xml,
        "  <ssd:DefaultExperiment startTime=\"{}\" stopTime=\"{}\"/>",
        grid.0, grid.1
    );
    let _ = writeln!(xml, "</ssd:SystemStructureDescription>");
    xml
}

/// The parameter set: each `(name, value)`, `name` qualified by its component.
pub fn parameter_values(model: &str, parameters: &[(String, f64)]) -> String {
    let mut xml = String::new();
    let _ = writeln!(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        xml,
        "<ssv:ParameterSet \
         xmlns:ssv=\"http://ssp-standard.org/SSP1/SystemStructureParameterValues\" \
         version=\"1.0\" name=\"{}\">",
        escape(model)
    );
    let _ = writeln!(xml, "  <ssv:Parameters>");
    for (name, value) in parameters {
        let _ = writeln!(
            xml,
            "    <ssv:Parameter name=\"{}\"><ssv:Real value=\"{value:e}\"/></ssv:Parameter>",
            escape(name)
        );
    }
    let _ = writeln!(xml, "  </ssv:Parameters>");
    let _ = writeln!(xml, "</ssv:ParameterSet>");
    xml
}

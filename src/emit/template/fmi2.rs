//! The FMI 2.0 co-simulation interface of the model: the C functions a master (FMPy, a HIL
//! rig, Simulink) calls. `DoStep` advances the crate's [`Simulation`] with its method.
//!
//! Value references are indices into `model::VARIABLES`; the parameters among them are
//! settable until initialisation ends. No function unwinds across the C boundary: a panic
//! becomes `fmi2Fatal`, every misuse `fmi2Error` with a logged message.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::model;
use crate::runtime::{Model, Simulation};

pub type Status = i32;
const OK: Status = 0;
const ERROR: Status = 3;
const FATAL: Status = 4;

type Logger = unsafe extern "C" fn(
    *mut c_void,
    *const c_char,
    Status,
    *const c_char,
    *const c_char,
    ...
);

#[repr(C)]
pub struct CallbackFunctions {
    logger: Option<Logger>,
    allocate_memory: *const c_void,
    free_memory: *const c_void,
    step_finished: *const c_void,
    component_environment: *mut c_void,
}

enum Phase {
    /// Parameters may be set.
    Instantiated(Model),
    Initializing(Model),
    Stepping(Box<Simulation>),
    /// After an error, or terminated: only `Reset` and `FreeInstance` help.
    Ended,
}

pub struct Instance {
    name: CString,
    logger: Option<Logger>,
    environment: *mut c_void,
    start: f64,
    phase: Phase,
}

impl Instance {
    fn log(&self, status: Status, message: &str) {
        let Some(logger) = self.logger else {
            return;
        };
        let text = CString::new(message.replace('\0', " ")).unwrap_or_default();
        let category = if status >= ERROR { c"logStatusError" } else { c"logAll" };
        // SAFETY: the master gave this logger for this instance; every string is
        // NUL-terminated and lives across the call, and "%s" takes the one argument passed.
        unsafe {
            logger(
                self.environment,
                self.name.as_ptr(),
                status,
                category.as_ptr(),
                c"%s".as_ptr(),
                text.as_ptr(),
            );
        }
    }

    fn fail(&mut self, message: &str) -> Status {
        self.log(ERROR, message);
        ERROR
    }
}

/// Runs `body` on the instance `c` points to, catching panics.
fn with(c: *mut c_void, body: impl FnOnce(&mut Instance) -> Status) -> Status {
    if c.is_null() {
        return ERROR;
    }
    // SAFETY: `c` is what `fmi2Instantiate` returned (a leaked `Box<Instance>`), not yet
    // freed: the FMI standard makes the master pass only that.
    let instance = unsafe { &mut *c.cast::<Instance>() };
    match catch_unwind(AssertUnwindSafe(|| body(instance))) {
        Ok(status) => status,
        Err(_) => {
            instance.phase = Phase::Ended;
            instance.log(FATAL, "internal error");
            FATAL
        }
    }
}

/// The `n` values a pointer of the C API points to (none when `n` is 0).
unsafe fn slice<'a, T>(p: *const T, n: usize) -> &'a [T] {
    if n == 0 || p.is_null() {
        &[]
    } else {
        // SAFETY: the caller vouches that `p` points to `n` values.
        unsafe { std::slice::from_raw_parts(p, n) }
    }
}

unsafe fn slice_mut<'a, T>(p: *mut T, n: usize) -> &'a mut [T] {
    if n == 0 || p.is_null() {
        &mut []
    } else {
        // SAFETY: the caller vouches that `p` points to `n` writable values.
        unsafe { std::slice::from_raw_parts_mut(p, n) }
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetTypesPlatform() -> *const c_char {
    c"default".as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetVersion() -> *const c_char {
    c"2.0".as_ptr()
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2Instantiate(
    name: *const c_char,
    kind: i32,
    _guid: *const c_char,
    _resources: *const c_char,
    functions: *const CallbackFunctions,
    _visible: i32,
    _logging_on: i32,
) -> *mut c_void {
    let made = catch_unwind(|| {
        let name = if name.is_null() {
            CString::default()
        } else {
            // SAFETY: the master passes a NUL-terminated instance name.
            unsafe { CStr::from_ptr(name) }.to_owned()
        };
        // SAFETY: the master passes its callbacks, or null.
        let functions = unsafe { functions.as_ref() };
        let instance = Instance {
            name,
            logger: functions.and_then(|f| f.logger),
            environment: functions.map_or(std::ptr::null_mut(), |f| f.component_environment),
            start: model::START,
            phase: Phase::Instantiated(Model::new()),
        };
        // Co-simulation (1) only.
        if kind != 1 {
            instance.log(ERROR, "this FMU supports co-simulation only");
            return std::ptr::null_mut();
        }
        Box::into_raw(Box::new(instance)).cast::<c_void>()
    });
    made.unwrap_or(std::ptr::null_mut())
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2FreeInstance(c: *mut c_void) {
    if !c.is_null() {
        // SAFETY: `c` came from `fmi2Instantiate` and the master frees it once.
        drop(unsafe { Box::from_raw(c.cast::<Instance>()) });
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2SetDebugLogging(
    c: *mut c_void,
    _on: i32,
    _n: usize,
    _categories: *const *const c_char,
) -> Status {
    with(c, |_| OK)
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2SetupExperiment(
    c: *mut c_void,
    _tolerance_defined: i32,
    _tolerance: f64,
    start: f64,
    _stop_defined: i32,
    _stop: f64,
) -> Status {
    with(c, |inst| match inst.phase {
        Phase::Instantiated(_) if start.is_finite() => {
            inst.start = start;
            OK
        }
        Phase::Instantiated(_) => inst.fail("the start time is not a finite number"),
        _ => inst.fail("fmi2SetupExperiment is allowed only before initialization"),
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2EnterInitializationMode(c: *mut c_void) -> Status {
    with(c, |inst| {
        match std::mem::replace(&mut inst.phase, Phase::Ended) {
            Phase::Instantiated(model) => {
                inst.phase = Phase::Initializing(model);
                OK
            }
            other => {
                inst.phase = other;
                inst.fail("fmi2EnterInitializationMode is allowed only after instantiation")
            }
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2ExitInitializationMode(c: *mut c_void) -> Status {
    with(c, |inst| {
        match std::mem::replace(&mut inst.phase, Phase::Ended) {
            Phase::Initializing(model) => match Simulation::new(model, inst.start) {
                Ok(sim) => {
                    inst.phase = Phase::Stepping(Box::new(sim));
                    OK
                }
                Err(failure) => inst.fail(&format!("initialization failed: {failure}")),
            },
            other => {
                inst.phase = other;
                inst.fail("fmi2ExitInitializationMode is allowed only in initialization mode")
            }
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2Terminate(c: *mut c_void) -> Status {
    with(c, |inst| {
        inst.phase = Phase::Ended;
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2Reset(c: *mut c_void) -> Status {
    with(c, |inst| {
        inst.phase = Phase::Instantiated(Model::new());
        inst.start = model::START;
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetReal(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    values: *mut f64,
) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes `n` references and room for `n` values.
        let (vr, values) = unsafe { (slice(vr, n), slice_mut(values, n)) };
        let Some(bad) = vr.iter().find(|&&r| r as usize >= model::VARIABLES.len()) else {
            return get(inst, vr, values);
        };
        inst.fail(&format!("unknown value reference {bad}"))
    })
}

fn get(inst: &mut Instance, vr: &[u32], values: &mut [f64]) -> Status {
    let regs: Vec<usize> = vr.iter().map(|&r| model::VARIABLES[r as usize].1).collect();
    let read = match &mut inst.phase {
        Phase::Instantiated(model) | Phase::Initializing(model) => {
            Ok(regs.iter().map(|&reg| model.register(reg)).collect())
        }
        Phase::Stepping(sim) => sim.registers_at_state(&regs),
        Phase::Ended => return inst.fail("the instance has ended: reset it"),
    };
    match read {
        Ok(read) => {
            values.copy_from_slice(&read);
            OK
        }
        Err(failure) => inst.fail(&format!("evaluating the model failed: {failure}")),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2SetReal(
    c: *mut c_void,
    vr: *const u32,
    n: usize,
    values: *const f64,
) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes `n` references and `n` values.
        let (vr, values) = unsafe { (slice(vr, n), slice(values, n)) };
        for (&r, &x) in vr.iter().zip(values) {
            let Some(&(name, _)) = model::VARIABLES.get(r as usize) else {
                return inst.fail(&format!("unknown value reference {r}"));
            };
            if !x.is_finite() {
                return inst.fail(&format!("`{name}` cannot be set to {x}"));
            }
            let model = match &mut inst.phase {
                Phase::Instantiated(model) | Phase::Initializing(model) => model,
                _ => return inst.fail(&format!("`{name}` can be set only before initialization ends")),
            };
            if let Err(failure) = model.set_parameter(name, x) {
                return inst.fail(&format!("`{name}` cannot be set: {failure}"));
            }
        }
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2DoStep(c: *mut c_void, t: f64, h: f64, _no_set_prior: i32) -> Status {
    with(c, |inst| {
        let Phase::Stepping(sim) = &mut inst.phase else {
            return inst.fail("fmi2DoStep is allowed only after initialization");
        };
        if !(h > 0.0 && h.is_finite()) {
            return inst.fail(&format!("the communication step {h} is not a positive number"));
        }
        let now = sim.time();
        if (t - now).abs() > 1e-9 * (1.0 + now.abs()) {
            return inst.fail(&format!("the step starts at {t}, but the FMU is at {now}"));
        }
        match sim.step(h) {
            Ok(()) => OK,
            Err(failure) => {
                let message = format!("the step from {t} failed: {failure}");
                inst.phase = Phase::Ended;
                inst.fail(&message)
            }
        }
    })
}

/// The functions of the interface this FMU does not support: each answers `fmi2Error` and
/// says so.
macro_rules! unsupported {
    ($($name:ident($($arg:ident: $ty:ty),*);)*) => {$(
        #[unsafe(no_mangle)]
        pub extern "C" fn $name(c: *mut c_void, $(_: $ty),*) -> Status {
            with(c, |inst| inst.fail(concat!(stringify!($name), " is not supported")))
        }
    )*};
}

unsupported! {
    fmi2GetInteger(vr: *const u32, n: usize, values: *mut i32);
    fmi2GetBoolean(vr: *const u32, n: usize, values: *mut i32);
    fmi2GetString(vr: *const u32, n: usize, values: *mut *const c_char);
    fmi2SetInteger(vr: *const u32, n: usize, values: *const i32);
    fmi2SetBoolean(vr: *const u32, n: usize, values: *const i32);
    fmi2SetString(vr: *const u32, n: usize, values: *const *const c_char);
    fmi2GetFMUstate(state: *mut *mut c_void);
    fmi2SetFMUstate(state: *mut c_void);
    fmi2FreeFMUstate(state: *mut *mut c_void);
    fmi2SerializedFMUstateSize(state: *mut c_void, size: *mut usize);
    fmi2SerializeFMUstate(state: *mut c_void, bytes: *mut u8, size: usize);
    fmi2DeSerializeFMUstate(bytes: *const u8, size: usize, state: *mut *mut c_void);
    fmi2GetDirectionalDerivative(a: *const u32, na: usize, b: *const u32, nb: usize, dv: *const f64, out: *mut f64);
    fmi2SetRealInputDerivatives(vr: *const u32, n: usize, order: *const i32, values: *const f64);
    fmi2GetRealOutputDerivatives(vr: *const u32, n: usize, order: *const i32, values: *mut f64);
    fmi2CancelStep();
    fmi2GetStatus(kind: i32, value: *mut i32);
    fmi2GetRealStatus(kind: i32, value: *mut f64);
    fmi2GetIntegerStatus(kind: i32, value: *mut i32);
    fmi2GetBooleanStatus(kind: i32, value: *mut i32);
    fmi2GetStringStatus(kind: i32, value: *mut *const c_char);
}

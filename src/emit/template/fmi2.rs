//! The FMI 2.0 co-simulation interface of the model: the C functions a master (FMPy, a HIL
//! rig, Simulink) calls. `DoStep` advances the crate's [`Simulation`] with its method, in
//! steps of at most the crate's step.
//!
//! Instantiated for Model Exchange, the master integrates: it sets the time and the states
//! and reads the derivatives, and the breakpoints of time inputs are time events.
//!
//! Value references are indices into `model::VARIABLES`, then one per state derivative
//! (`der(x)`, in `model::STATE_NAMES` order); the parameters are settable until
//! initialisation ends, the tunable ones (`model::TUNABLE`) during the run too, the inputs
//! (`model::INPUTS`) at any time, held until set again. No function unwinds across the C boundary: a panic
//! becomes `fmi2Fatal`, every misuse `fmi2Error` with a logged message.

#![allow(non_snake_case, clippy::missing_safety_doc, clippy::not_unsafe_ptr_arg_deref)]

use std::ffi::{CStr, CString, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::model;
use crate::runtime::{Model, Simulation};

pub type Status = i32;
const OK: Status = 0;
/// The slave cannot go on (`terminate` in the model ended its run).
const DISCARD: Status = 2;
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
    /// Model Exchange after initialisation: the master's time and states.
    Continuous {
        model: Box<Model>,
        t: f64,
        x: Vec<f64>,
    },
    /// After an error, or terminated: only `Reset` and `FreeInstance` help.
    Ended,
}

pub struct Instance {
    name: CString,
    logger: Option<Logger>,
    environment: *mut c_void,
    start: f64,
    phase: Phase,
    /// Instantiated for Model Exchange.
    exchange: bool,
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
            exchange: kind == 0,
        };
        if !(kind == 1 || kind == 0 && MODEL_EXCHANGE) {
            instance.log(ERROR, "this FMU does not support the interface asked for");
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
            Phase::Initializing(mut model) if inst.exchange => match model.initialize(inst.start) {
                Ok(x) => {
                    model.enter_interval_from(inst.start);
                    let t = inst.start;
                    inst.phase = Phase::Continuous {
                        model: Box::new(model),
                        t,
                        x,
                    };
                    OK
                }
                Err(failure) => inst.fail(&format!("initialization failed: {failure}")),
            },
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
        let Some(bad) = vr.iter().find(|&&r| register_of(r).is_none()) else {
            return get(inst, vr, values);
        };
        inst.fail(&format!("unknown value reference {bad}"))
    })
}

/// The register of value reference `r`: a variable's, or a state derivative's.
fn register_of(r: u32) -> Option<usize> {
    let r = r as usize;
    let variables = model::VARIABLES.len();
    match model::VARIABLES.get(r) {
        Some(&(_, reg)) => Some(reg),
        None => model::WHOLE.derivatives.get(r - variables).copied(),
    }
}

fn get(inst: &mut Instance, vr: &[u32], values: &mut [f64]) -> Status {
    let regs: Vec<usize> = vr.iter().filter_map(|&r| register_of(r)).collect();
    let read = match &mut inst.phase {
        Phase::Instantiated(model) | Phase::Initializing(model) => {
            Ok(regs.iter().map(|&reg| model.register(reg)).collect())
        }
        Phase::Stepping(sim) => sim.registers_at_state(&regs),
        Phase::Continuous { model, t, x } => {
            let mut dx = vec![0.0; x.len()];
            (model.rhs(*t, x, &mut dx)).map(|()| regs.iter().map(|&reg| model.register(reg)).collect())
        }
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
            let input = Model::input_names().any(|n| n == name);
            let set = match (&mut inst.phase, input) {
                (Phase::Instantiated(model) | Phase::Initializing(model), false) => {
                    model.set_parameter(name, x)
                }
                (Phase::Instantiated(model) | Phase::Initializing(model), true) => {
                    model.set_input(name, x)
                }
                (Phase::Stepping(sim), true) => sim.set_input(name, x),
                (Phase::Continuous { model, .. }, true) => model.set_input(name, x),
                (Phase::Stepping(sim), false) => sim.tune(name, x),
                (Phase::Continuous { model, .. }, false) => model.tune(name, x),
                (Phase::Ended, _) => return inst.fail("the instance has ended: reset it"),
            };
            if let Err(failure) = set {
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
        // Steps of at most the crate's step: a communication step of several takes as many.
        let steps = ((h / model::STEP) * (1.0 - 1e-12)).ceil().max(1.0);
        let substep = h / steps;
        let mut stepped = Ok(());
        for _ in 0..steps as u64 {
            if sim.terminated() || stepped.is_err() {
                break;
            }
            stepped = sim.step(substep);
        }
        match stepped {
            Ok(()) if sim.terminated() => {
                let at = sim.time();
                inst.log(DISCARD, &format!("the model terminated the run at t = {at}"));
                DISCARD
            }
            Ok(()) => OK,
            Err(failure) => {
                let message = format!("the step from {t} failed: {failure}");
                inst.phase = Phase::Ended;
                inst.fail(&message)
            }
        }
    })
}

/// Whether the FMU offers Model Exchange (`emit --fmi-type me` writes `true`).
const MODEL_EXCHANGE: bool = false;

/// The master's states and time, in Model Exchange after initialisation.
fn continuous(inst: &mut Instance) -> Result<(&mut Model, &mut f64, &mut Vec<f64>), Status> {
    if !matches!(inst.phase, Phase::Continuous { .. }) {
        return Err(inst.fail("a Model Exchange function is allowed only after initialization"));
    }
    match &mut inst.phase {
        Phase::Continuous { model, t, x } => Ok((model, t, x)),
        _ => Err(FATAL),
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2SetTime(c: *mut c_void, time: f64) -> Status {
    with(c, |inst| {
        if !time.is_finite() {
            return inst.fail(&format!("the time {time} is not a finite number"));
        }
        match continuous(inst) {
            Ok((_, t, _)) => {
                *t = time;
                OK
            }
            Err(status) => status,
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2SetContinuousStates(c: *mut c_void, values: *const f64, n: usize) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes `n` values.
        let values = unsafe { slice(values, n) };
        if values.iter().any(|v| !v.is_finite()) {
            return inst.fail("a state cannot be set to a value that is not a finite number");
        }
        let copied = match continuous(inst) {
            Ok((_, _, x)) if x.len() == n => {
                x.copy_from_slice(values);
                true
            }
            Ok(_) => false,
            Err(status) => return status,
        };
        if copied { OK } else { inst.fail("the number of states given is not the model's") }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetContinuousStates(c: *mut c_void, values: *mut f64, n: usize) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes room for `n` values.
        let values = unsafe { slice_mut(values, n) };
        let copied = match continuous(inst) {
            Ok((_, _, x)) if x.len() == n => {
                values.copy_from_slice(x);
                true
            }
            Ok(_) => false,
            Err(status) => return status,
        };
        if copied { OK } else { inst.fail("the number of states asked for is not the model's") }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetNominalsOfContinuousStates(c: *mut c_void, values: *mut f64, n: usize) -> Status {
    with(c, |_| {
        // SAFETY: the master passes room for `n` values.
        unsafe { slice_mut(values, n) }.fill(1.0);
        OK
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetDerivatives(c: *mut c_void, values: *mut f64, n: usize) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes room for `n` values.
        let values = unsafe { slice_mut(values, n) };
        let evaluated = match continuous(inst) {
            Ok((_, _, x)) if x.len() != n => Err("the number of derivatives asked for is not the model's".to_string()),
            Ok((model, t, x)) => model.rhs(*t, x, values).map_err(|f| format!("evaluating the model failed: {f}")),
            Err(status) => return status,
        };
        match evaluated {
            Ok(()) => OK,
            Err(message) => inst.fail(&message),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2GetEventIndicators(c: *mut c_void, values: *mut f64, n: usize) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes room for `n` values.
        let values = unsafe { slice_mut(values, n) };
        let evaluated = match continuous(inst) {
            Ok(_) if n != model::EVENT_INDICATORS => {
                Err("the number of event indicators asked for is not the model's".to_string())
            }
            Ok((model, t, x)) => (model.event_indicators(*t, x, values))
                .map_err(|f| format!("evaluating the model failed: {f}")),
            Err(status) => return status,
        };
        match evaluated {
            Ok(()) => OK,
            Err(message) => inst.fail(&message),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2EnterEventMode(c: *mut c_void) -> Status {
    with(c, |inst| continuous(inst).map_or_else(|status| status, |_| OK))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2EnterContinuousTimeMode(c: *mut c_void) -> Status {
    with(c, |inst| continuous(inst).map_or_else(|status| status, |_| OK))
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2CompletedIntegratorStep(
    c: *mut c_void,
    _no_set_prior: i32,
    enter_event_mode: *mut i32,
    terminate: *mut i32,
) -> Status {
    with(c, |inst| {
        // SAFETY: the master passes two writable flags (or null).
        unsafe {
            if let Some(flag) = enter_event_mode.as_mut() {
                *flag = 0;
            }
            if let Some(flag) = terminate.as_mut() {
                *flag = 0;
            }
        }
        continuous(inst).map_or_else(|status| status, |_| OK)
    })
}

/// `fmi2EventInfo`.
#[repr(C)]
pub struct EventInfo {
    new_discrete_states_needed: i32,
    terminate_simulation: i32,
    nominals_changed: i32,
    values_changed: i32,
    next_event_time_defined: i32,
    next_event_time: f64,
}

#[unsafe(no_mangle)]
pub extern "C" fn fmi2NewDiscreteStates(c: *mut c_void, info: *mut EventInfo) -> Status {
    with(c, |inst| {
        let (model, t, x) = match continuous(inst) {
            Ok(state) => state,
            Err(status) => return status,
        };
        // Event iteration (the switches settle, the `when` clauses fire), and the relations on
        // time hold their values up to the next time event: a breakpoint or a `sample` instant.
        let now = *t;
        let scheduled = model.breakpoints().contains(&now);
        let before = x.clone();
        let happened = model.event(now, x, scheduled);
        model.enter_interval_from(now);
        let next = model.next_time_event(now);
        let terminated = model.terminated();
        if let Err(failure) = happened {
            return inst.fail(&format!("the event at t = {now} failed: {failure}"));
        }
        // SAFETY: the master passes a writable event info (or null).
        if let Some(info) = unsafe { info.as_mut() } {
            *info = EventInfo {
                new_discrete_states_needed: 0,
                terminate_simulation: i32::from(terminated),
                nominals_changed: 0,
                // A `reinit` moved a state: the master reads the states again.
                values_changed: i32::from(*x != before),
                next_event_time_defined: i32::from(next.is_some()),
                next_event_time: next.unwrap_or(0.0),
            };
        }
        OK
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

//! The tracer: what CUPTI's callbacks and the threads need once tracing is on (the
//! library, the subscriber, the record layouts), set once by `tracing.rs`.

use std::sync::OnceLock;

use cupti::callback::Subscriber;
use cupti::Cupti;

use crate::decode::Layouts;

/// What the callbacks use, set once tracing is on.
pub struct Tracer {
    pub cupti: &'static Cupti,
    pub subscriber: Subscriber,
    pub layouts: &'static dyn Layouts,
}

static TRACER: OnceLock<Tracer> = OnceLock::new();

/// The tracer, once started.
pub fn get() -> Option<&'static Tracer> {
    TRACER.get()
}

/// Sets the tracer (the first one set stays) and returns it.
pub(crate) fn set(tracer: Tracer) -> &'static Tracer {
    TRACER.get_or_init(|| tracer)
}

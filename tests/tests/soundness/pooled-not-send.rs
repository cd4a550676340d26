// A guard owns its object: it moves to another thread only if the object
// may. (No recycler of such objects can be built, see
// `recycler-of-not-send.rs`; the bound holds for the type regardless.)
use std::rc::Rc;

use recycler_core::{Pooled, Recyclable};

struct NotSend(Rc<u8>);

impl Recyclable for NotSend {
    fn reset(&mut self) {}
}

fn assert_send<T: Send>() {}

fn main() {
    assert_send::<Pooled<'static, NotSend>>();
}

// The owned guard, likewise: `'static` does not make it `Send`.
use std::rc::Rc;

use recycler_core::{OwnedPooled, Recyclable};

struct NotSend(Rc<u8>);

impl Recyclable for NotSend {
    fn reset(&mut self) {}
}

fn assert_send<T: Send>() {}

fn main() {
    assert_send::<OwnedPooled<NotSend>>();
}

// A recycler hands objects between threads, so it pools only `Send` ones.
use std::rc::Rc;

use recycler_core::{Recyclable, Recycler};

struct NotSend(Rc<u8>);

impl Recyclable for NotSend {
    fn reset(&mut self) {}
}

fn main() {
    let pool = Recycler::with_factory(|| NotSend(Rc::new(0)));
    drop(pool.get());
}

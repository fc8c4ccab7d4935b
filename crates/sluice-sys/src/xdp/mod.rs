//! AF_XDP: the rings an XDP socket shares with the kernel ([`ring`], the
//! index arithmetic in `index`), the XDP program that steers an
//! interface's frames to receiving sockets ([`prog`]), and a receiver of
//! every queue of an interface ([`rx`]).

mod index;
pub mod prog;
pub mod ring;
pub mod rx;

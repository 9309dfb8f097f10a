//! net

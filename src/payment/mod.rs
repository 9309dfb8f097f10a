pub mod local_check;

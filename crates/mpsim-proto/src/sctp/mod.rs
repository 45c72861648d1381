pub mod variants;

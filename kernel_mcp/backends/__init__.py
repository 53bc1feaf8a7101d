"""What differs per language and vendor: targets, compiling, resource usage and assembly statistics."""

"""Every file the project reads or writes for users: the loader, schemas, profiles, result files, user data."""

/** What the service writes in its data directory is its owner's alone: conversations and memory are as private as the token. */
export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

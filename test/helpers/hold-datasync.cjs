// Preloaded into a child process (NODE_OPTIONS=--require): while the file RA_TEST_HOLD_DATASYNC names
// exists, every fdatasync through a FileHandle of the main thread (the journal's) waits for good before it
// starts: writes reach the file, their commit never ends. A kill -9 then leaves what a crash between a
// record's write and its fdatasync leaves.
const { existsSync } = require('node:fs');
const { open } = require('node:fs/promises');

const flag = process.env.RA_TEST_HOLD_DATASYNC;
void open(__filename, 'r').then(async (handle) => {
  const proto = Object.getPrototypeOf(handle);
  const datasync = proto.datasync;
  proto.datasync = function heldDatasync() {
    return flag && existsSync(flag) ? new Promise(() => {}) : datasync.call(this);
  };
  await handle.close();
});

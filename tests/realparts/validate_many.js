// Validates many recordings in one Node process with AppMap's own validator
// (@appland/appmap-validate). Usage: node validate_many.js VALIDATOR_LIB FILE...
// Prints one JSON line: {"file": error-or-null, ...}; exits 0 when it could check every file.
const { readFileSync } = require('fs');
const [, , lib, ...files] = process.argv;
const { validate } = require(lib);
const out = {};
for (const file of files) {
  try {
    validate(JSON.parse(readFileSync(file, 'utf8')));
    out[file] = null;
  } catch (error) {
    out[file] = String((error && error.message) || error);
  }
}
process.stdout.write(JSON.stringify(out) + '\n');

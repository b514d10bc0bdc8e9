/* rulecheck.h — checks the engine's rule index (the "Rule index:" comment in core/)
 * against the rules of docs/SEMANTICS.md, the RULE n markers in core/ and the rule
 * test suites. Pure: it reads only the texts it is given (the test reads the files
 * meson names, or broken copies of them), so that it can be shown to fail.
 *
 * What it wants:
 * - one "Rule index:" block in the core files; each entry a line
 *   " *   rule N  <words>  file.c function(), file.c function()";
 * - every rule of SEMANTICS.md ("## Rules", lines "N. **...") has an entry, and no
 *   entry names a rule that is not there;
 * - every place an entry names holds a "RULE N" marker (upper case) in that
 *   function, its body or the comment just above it;
 * - every RULE N marker is in a place the entry of rule N names (a marker outside
 *   any function, or in one the index does not name, is an error);
 * - every rule has a test: Test(ruleN, ...) or Test(ruleN_<variant>, ...).
 */
#ifndef OOMD_RULECHECK_H
#define OOMD_RULECHECK_H

#include <glib.h>

typedef struct {
	const char *name; /* the file's path; the index names files by basename */
	const char *text;
} rc_file;

/* Returns the number of problems found; each is appended to `errors` as a line. */
unsigned rc_check(const char *semantics, const rc_file *core, size_t ncore, const rc_file *tests,
		  size_t ntests, GString *errors);

#endif

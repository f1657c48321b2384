// SPDX-License-Identifier: GPL-2.0
/*
 * vm.superpage_enabled: the sysctl exists, takes 0, 1 and 2 and reads them
 * back, rejects anything else with EINVAL without changing the value, and
 * refuses unprivileged writers.  The promotion tunables keep to their
 * documented ranges the same way.  Each fixture pushes every knob in its
 * setup and pops it in its teardown (in the parent: a failed ASSERT
 * longjmp()s past the child's teardown); no test body restores one.
 */
#define _GNU_SOURCE
#include <sys/wait.h>

#include "../kselftest_harness.h"
#include "superpage_util.h"

#define SYSCTL_PATH SP_ENABLED

/* Write @val to the sysctl in one write(); return 0 or the errno. */
static int sysctl_write(const char *val)
{
	return sp_write_file(SYSCTL_PATH, val);
}

/* Read the sysctl as an integer; -1 when it cannot be read. */
static int sysctl_read(void)
{
	return sp_read_int(SYSCTL_PATH);
}

FIXTURE(sysctl) {
	struct sp_settings saved;
};

FIXTURE_SETUP(sysctl)
{
	self->saved.pushed = 0;
	if (access(SYSCTL_PATH, F_OK))
		SKIP(return, "%s not present (CONFIG_SUPERPAGE=n?)", SYSCTL_PATH);
	if (geteuid())
		SKIP(return, "must be run as root");
	sp_settings_push(&self->saved);
	ASSERT_GE(sysctl_read(), 0);
	ASSERT_LE(sysctl_read(), 2);
}

FIXTURE_TEARDOWN_PARENT(sysctl)
{
	if (self->saved.pushed)
		sp_settings_pop(&self->saved);
}

TEST_F(sysctl, default_is_off_at_boot)
{
	/* The guest's runner reads the sysctl before any test runs. */
	const char *boot = getenv("SUPERPAGE_BOOT_ENABLED");

	if (!boot || !*boot)
		SKIP(return, "value at boot unknown (SUPERPAGE_BOOT_ENABLED unset)");
	EXPECT_STREQ("0", boot);
}

TEST_F(sysctl, accepts_valid_values)
{
	static const char * const vals[] = { "0", "1", "2", "1\n", "0\n", "2\n" };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vals); i++) {
		ASSERT_EQ(0, sysctl_write(vals[i])) TH_LOG("writing '%s'", vals[i]);
		EXPECT_EQ(atoi(vals[i]), sysctl_read());
	}
}

TEST_F(sysctl, rejects_invalid_values)
{
	static const char * const bad[] = {
		"-1", "3", "99999999999", "abc", "-1\n", "3\n", "2147483648",
		"4294967298", "",
	};
	static const char * const before[] = { "0", "1", "2" };
	unsigned int i, j;

	for (j = 0; j < ARRAY_SIZE(before); j++) {
		ASSERT_EQ(0, sysctl_write(before[j]));
		for (i = 0; i < ARRAY_SIZE(bad); i++) {
			int err = sysctl_write(bad[i]);

			/* An empty write stores nothing and is not an error. */
			if (!bad[i][0]) {
				EXPECT_EQ(0, err);
			} else {
				EXPECT_EQ(EINVAL, err)
					TH_LOG("writing '%s' gave %s", bad[i], strerror(err));
			}
			EXPECT_EQ(atoi(before[j]), sysctl_read())
				TH_LOG("value changed by writing '%s'", bad[i]);
		}
	}
}

TEST_F(sysctl, unprivileged_write_fails)
{
	int status;
	pid_t pid;

	ASSERT_EQ(0, sysctl_write("1"));
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid) {
		int err;

		if (setgid(65534) || setuid(65534))
			_exit(2);
		err = sysctl_write("2");
		/* Reading stays allowed. */
		if (sysctl_read() != 1)
			_exit(3);
		_exit(err == EACCES ? 0 : 1);
	}
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	ASSERT_TRUE(WIFEXITED(status));
	EXPECT_EQ(0, WEXITSTATUS(status));
	EXPECT_EQ(1, sysctl_read());
}

/*
 * The daemon's tunables: each takes its documented minimum and maximum and
 * rejects one beyond either, and non-numbers, with EINVAL, storing nothing.
 */
FIXTURE(tunables) {
	struct sp_settings saved;
};

FIXTURE_SETUP(tunables)
{
	self->saved.pushed = 0;
	if (geteuid())
		SKIP(return, "must be run as root");
	if (access(SP_THRESHOLD, F_OK))
		SKIP(return, "this kernel has no promotion tunables");
	sp_settings_push(&self->saved);
}

FIXTURE_TEARDOWN_PARENT(tunables)
{
	if (self->saved.pushed)
		sp_settings_pop(&self->saved);
}

TEST_F(tunables, ranges)
{
	static const struct {
		const char *path;
		long min, max;
	} knobs[] = {
		{ SP_THRESHOLD, 1, 512 },
		{ SP_SCAN_SLEEP, 1, 3600000 },
		{ SP_PAGES_TO_SCAN, 512, 16777216 },
		{ SP_DEMOTE, 0, 1 },
		{ SP_CLUSTER, 0, 9 },
		{ SP_FAULT_ZERO, 1, 512 },
		{ SP_PREZERO, 0, 65536 },
	};
	unsigned int i, j;

	for (i = 0; i < ARRAY_SIZE(knobs); i++) {
		const char *path = knobs[i].path;
		long saved = sp_read_int(path);
		char ok[2][32], bad[3][32];

		ASSERT_LE(knobs[i].min, saved) TH_LOG("%s", path);
		ASSERT_GE(knobs[i].max, saved) TH_LOG("%s", path);
		snprintf(ok[0], 32, "%ld", knobs[i].min);
		snprintf(ok[1], 32, "%ld", knobs[i].max);
		snprintf(bad[0], 32, "%ld", knobs[i].min - 1);
		snprintf(bad[1], 32, "%ld", knobs[i].max + 1);
		snprintf(bad[2], 32, "x");
		for (j = 0; j < 2; j++) {
			EXPECT_EQ(0, sp_write_file(path, ok[j]))
				TH_LOG("%s: '%s'", path, ok[j]);
			EXPECT_EQ(atol(ok[j]), sp_read_int(path));
		}
		for (j = 0; j < 3; j++) {
			EXPECT_EQ(EINVAL, sp_write_file(path, bad[j]))
				TH_LOG("%s: '%s'", path, bad[j]);
			EXPECT_EQ(knobs[i].max, sp_read_int(path))
				TH_LOG("%s changed by '%s'", path, bad[j]);
		}
	}
}

TEST_HARNESS_MAIN

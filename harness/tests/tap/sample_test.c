// SPDX-License-Identifier: GPL-2.0
/*
 * Never built: harness/tests/tap-summary-test.sh counts the cases of this
 * file with harness/ksft-count.sh and wants 10 (see "want").
 */
#include <signal.h>
#include "../kselftest_harness.h"

FIXTURE(plain) {};
FIXTURE_SETUP(plain) {}
FIXTURE_TEARDOWN(plain) {}

FIXTURE(multi) {};
FIXTURE_VARIANT(multi) { int n; };
FIXTURE_VARIANT_ADD(multi, one) { .n = 1 };
FIXTURE_VARIANT_ADD(multi, two) { .n = 2 };
FIXTURE_VARIANT_ADD( multi , three) { .n = 3 };
FIXTURE_SETUP(multi) {}
FIXTURE_TEARDOWN(multi) {}

TEST(global_one) {}					/* 1 */
TEST_SIGNAL(global_signal, SIGSEGV) { raise(SIGSEGV); }	/* 1 */
TEST_F(plain, a) {}					/* 1 */
TEST_F_TIMEOUT(plain, b, 60) {}				/* 1 */
TEST_F(multi, c) {}					/* 3 */
TEST_F_SIGNAL(multi, d, SIGBUS) { raise(SIGBUS); }	/* 3 */

/* TEST_F(plain, commented_out) {} */
/*
TEST_F(plain, in_a_block_comment) {}
 */
// TEST(line_comment) {}

TEST_HARNESS_MAIN

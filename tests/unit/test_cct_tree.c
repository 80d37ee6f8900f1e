/* test_cct_tree.c — the writer's copy of a thread's calling-context tree
 * made a tree the readers accept (record/convert.c, conv_cct_tree), from
 * copies taken while the thread's hooks run on (an image exec'd in an
 * attached tree, CI's attach_races): the root's first child a node made
 * after the copy's count was read, a child the runtime was moving to the
 * front of its siblings (unreachable for a moment), and a node whose
 * function is of a module not written.  Expected: every node of the copy
 * reached exactly once, as a child of its own parent, newest child first
 * (as the runtime links them), and the copy cut at the first node that
 * cannot be in the file. */
#include <string.h>

#include "record/convert.h"
#include "unit.h"

static struct sonde_session_hdr *hdr(uint32_t nfuncs)
{
	struct sonde_session_hdr *h = calloc(1, sizeof *h);
	CHECK(h);
	h->modules[0].nfuncs = nfuncs;
	h->modules[1].nfuncs = nfuncs;
	return h;
}

/* node i of out: parent p, function number f of module 0 */
static void node(struct rec_node *out, uint32_t i, uint32_t p, uint32_t f)
{
	out[i] = (struct rec_node){ .parent = p, .func = SONDE_FUNC(0, f), .calls = 1 };
}

/* every node 1..n-1 reached once from the root, under its own parent */
static void check_tree(const struct rec_node *out, uint32_t n)
{
	uint8_t seen[64] = { 0 };
	CHECK(n <= 64);
	CHECK_EQ_U(out[0].next_sibling, 0);
	uint32_t reached = 0;
	for (uint32_t p = 0; p < n; p++)
		for (uint32_t c = out[p].first_child; c; c = out[c].next_sibling) {
			CHECK(c < n);
			CHECK(!seen[c]);
			CHECK_EQ_U(out[c].parent, p);
			seen[c] = 1;
			reached++;
		}
	CHECK_EQ_U(reached, n - 1);
}

static void links_out_of_the_copy(void)
{
	struct rec_node out[6];
	node(out, 0, 0, 0);
	node(out, 1, 0, 1); /* main */
	node(out, 2, 1, 2);
	node(out, 3, 1, 3);
	node(out, 4, 0, 4);
	node(out, 5, 3, 5);
	/* as read: the root's first child is node 6 (made after the count),
	 * node 1's list lost node 2 (a move to the front half done) */
	out[0].first_child = 6;
	out[4].next_sibling = 1;
	out[1].first_child = 3;
	out[3].next_sibling = 0;
	out[3].first_child = 5;
	out[2].next_sibling = 3;
	struct sonde_session_hdr *h = hdr(8);
	CHECK_EQ_U(conv_cct_tree(out, 6, 1, h), 6);
	check_tree(out, 6);
	/* newest first, as the runtime prepends */
	CHECK_EQ_U(out[0].first_child, 4);
	CHECK_EQ_U(out[4].next_sibling, 1);
	CHECK_EQ_U(out[1].first_child, 3);
	CHECK_EQ_U(out[3].next_sibling, 2);
	CHECK_EQ_U(out[3].first_child, 5);
	free(h);
}

static void cut_at_the_first_impossible_node(void)
{
	struct rec_node out[7];
	node(out, 0, 0, 0);
	node(out, 1, 0, 1);
	node(out, 2, 1, 2);
	node(out, 3, 2, 3);
	node(out, 4, 0, 4);
	node(out, 5, 4, 5);
	node(out, 6, 5, 6);
	struct sonde_session_hdr *h = hdr(8);
	/* a function of module 1, which the file does not have (one module written) */
	out[4].func = SONDE_FUNC(1, 4);
	CHECK_EQ_U(conv_cct_tree(out, 7, 1, h), 4);
	check_tree(out, 4);
	/* with module 1 written, a number past its functions */
	node(out, 4, 0, 4);
	out[5].func = SONDE_FUNC(1, 9);
	CHECK_EQ_U(conv_cct_tree(out, 7, 2, h), 5);
	check_tree(out, 5);
	/* a parent not before its node */
	node(out, 5, 4, 5);
	out[3].parent = 3;
	CHECK_EQ_U(conv_cct_tree(out, 7, 2, h), 3);
	check_tree(out, 3);
	/* the unnumbered bucket is a function of every module */
	node(out, 3, 2, 3);
	out[6].func = SONDE_FUNC(0, SONDE_UNNUMBERED);
	CHECK_EQ_U(conv_cct_tree(out, 7, 1, h), 7);
	check_tree(out, 7);
	/* a root alone */
	CHECK_EQ_U(conv_cct_tree(out, 1, 1, h), 1);
	CHECK_EQ_U(out[0].first_child, 0);
	free(h);
}

int main(void)
{
	RUN(links_out_of_the_copy);
	RUN(cut_at_the_first_impossible_node);
	UNIT_END();
}

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Trace events of reservation-based transparent superpages: how each
 * fault that the reservation code handled ended, and how each promotion
 * attempt ended, with the reason when it failed.  The vmstat counters
 * keep the totals; these events tell which fault or range, and why.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM superpage

#if !defined(_MM_SUPERPAGE_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define _MM_SUPERPAGE_TRACE_H

#include <linux/tracepoint.h>

#include "internal.h"

#define SUPERPAGE_FAULT_RESULTS						\
	EM(SUPERPAGE_FAULT_CREATED,	"created")			\
	EM(SUPERPAGE_FAULT_GROWN,	"grown")			\
	EM(SUPERPAGE_FAULT_RACED,	"raced")			\
	EM(SUPERPAGE_FAULT_RETRY,	"retry_busy")			\
	EM(SUPERPAGE_FAULT_ZERO_PAGE,	"zero_page")			\
	EM(SUPERPAGE_FAULT_NO_RESV,	"fallback_no_reservation")	\
	EM(SUPERPAGE_FAULT_UNSUITABLE,	"fallback_unsuitable_range")	\
	EM(SUPERPAGE_FAULT_UNUSABLE,	"fallback_unusable")		\
	EM(SUPERPAGE_FAULT_REFS,	"fallback_extra_reference")	\
	EMe(SUPERPAGE_FAULT_NO_MEMORY,	"fallback_no_order9_page")

#define SUPERPAGE_PROMOTE_RESULTS					\
	EM(SUPERPAGE_PROMOTED,		"promoted")			\
	EM(SUPERPAGE_PROMOTE_NONE,	"no_candidate")			\
	EM(SUPERPAGE_PROMOTE_BUSY,	"busy")				\
	EM(SUPERPAGE_PROMOTE_PINNED,	"pinned")			\
	EMe(SUPERPAGE_PROMOTE_CHANGED,	"changed")

#undef EM
#undef EMe
#define EM(a, b)	TRACE_DEFINE_ENUM(a);
#define EMe(a, b)	TRACE_DEFINE_ENUM(a);

SUPERPAGE_FAULT_RESULTS
SUPERPAGE_PROMOTE_RESULTS

#undef EM
#undef EMe
#define EM(a, b)	{a, b},
#define EMe(a, b)	{a, b}

TRACE_EVENT(superpage_fault,

	TP_PROTO(struct mm_struct *mm, unsigned long address,
		 enum superpage_fault_result result, unsigned int nr),

	TP_ARGS(mm, address, result, nr),

	TP_STRUCT__entry(
		__field(struct mm_struct *, mm)
		__field(unsigned long, address)
		__field(int, result)
		__field(unsigned int, nr)
	),

	TP_fast_assign(
		__entry->mm = mm;
		__entry->address = address;
		__entry->result = result;
		__entry->nr = nr;
	),

	TP_printk("mm=%p address=0x%lx result=%s mapped=%u",
		  __entry->mm, __entry->address,
		  __print_symbolic(__entry->result, SUPERPAGE_FAULT_RESULTS),
		  __entry->nr)
);

TRACE_EVENT(superpage_promote,

	TP_PROTO(struct mm_struct *mm, unsigned long haddr,
		 enum superpage_promote_result result),

	TP_ARGS(mm, haddr, result),

	TP_STRUCT__entry(
		__field(struct mm_struct *, mm)
		__field(unsigned long, haddr)
		__field(int, result)
	),

	TP_fast_assign(
		__entry->mm = mm;
		__entry->haddr = haddr;
		__entry->result = result;
	),

	TP_printk("mm=%p haddr=0x%lx result=%s",
		  __entry->mm, __entry->haddr,
		  __print_symbolic(__entry->result, SUPERPAGE_PROMOTE_RESULTS))
);

#endif /* _MM_SUPERPAGE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>

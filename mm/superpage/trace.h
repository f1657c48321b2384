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

TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_CREATED);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_GROWN);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_RACED);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_RETRY);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_ZERO_PAGE);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_NO_RESV);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_UNSUITABLE);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_UNUSABLE);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_REFS);
TRACE_DEFINE_ENUM(SUPERPAGE_FAULT_NO_MEMORY);
TRACE_DEFINE_ENUM(SUPERPAGE_PROMOTED);
TRACE_DEFINE_ENUM(SUPERPAGE_PROMOTE_NONE);
TRACE_DEFINE_ENUM(SUPERPAGE_PROMOTE_BUSY);
TRACE_DEFINE_ENUM(SUPERPAGE_PROMOTE_PINNED);
TRACE_DEFINE_ENUM(SUPERPAGE_PROMOTE_CHANGED);
TRACE_DEFINE_ENUM(SUPERPAGE_PROMOTE_LOCKED);

TRACE_EVENT(superpage_fault,
	    TP_PROTO(struct mm_struct *mm, unsigned long address,
		     enum superpage_fault_result result, unsigned int nr),
	    TP_ARGS(mm, address, result, nr),
	    TP_STRUCT__entry(__field(struct mm_struct *, mm)
			     __field(unsigned long, address)
			     __field(int, result)
			     __field(unsigned int, nr)),
	    TP_fast_assign(__entry->mm = mm;
			   __entry->address = address;
			   __entry->result = result;
			   __entry->nr = nr;),
	    TP_printk("mm=%p address=0x%lx result=%s mapped=%u",
		      __entry->mm, __entry->address,
		      __print_symbolic(__entry->result,
				       { SUPERPAGE_FAULT_CREATED, "created" },
				       { SUPERPAGE_FAULT_GROWN, "grown" },
				       { SUPERPAGE_FAULT_RACED, "raced" },
				       { SUPERPAGE_FAULT_RETRY, "retry_busy" },
				       { SUPERPAGE_FAULT_ZERO_PAGE, "zero_page" },
				       { SUPERPAGE_FAULT_NO_RESV,
					 "fallback_no_reservation" },
				       { SUPERPAGE_FAULT_UNSUITABLE,
					 "fallback_unsuitable_range" },
				       { SUPERPAGE_FAULT_UNUSABLE,
					 "fallback_unusable" },
				       { SUPERPAGE_FAULT_REFS,
					 "fallback_extra_reference" },
				       { SUPERPAGE_FAULT_NO_MEMORY,
					 "fallback_no_order9_page" }),
		      __entry->nr)
);

TRACE_EVENT(superpage_promote,
	    TP_PROTO(struct mm_struct *mm, unsigned long haddr,
		     enum superpage_promote_result result),
	    TP_ARGS(mm, haddr, result),
	    TP_STRUCT__entry(__field(struct mm_struct *, mm)
			     __field(unsigned long, haddr)
			     __field(int, result)),
	    TP_fast_assign(__entry->mm = mm;
			   __entry->haddr = haddr;
			   __entry->result = result;),
	    TP_printk("mm=%p haddr=0x%lx result=%s",
		      __entry->mm, __entry->haddr,
		      __print_symbolic(__entry->result,
				       { SUPERPAGE_PROMOTED, "promoted" },
				       { SUPERPAGE_PROMOTE_NONE, "no_candidate" },
				       { SUPERPAGE_PROMOTE_BUSY, "busy" },
				       { SUPERPAGE_PROMOTE_PINNED, "pinned" },
				       { SUPERPAGE_PROMOTE_CHANGED, "changed" },
				       { SUPERPAGE_PROMOTE_LOCKED, "locked" }))
);

#endif /* _MM_SUPERPAGE_TRACE_H */

#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE trace
#include <trace/define_trace.h>

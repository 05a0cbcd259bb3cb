// The boundary between PostgreSQL's longjmp errors and C++ exceptions.
//
// PostgreSQL reports errors with siglongjmp, which skips C++ destructors; C++ reports them with
// exceptions, which PostgreSQL cannot catch. Two tools keep them apart:
//
//  - pg::guarded(f) runs a PostgreSQL call while C++ objects with destructors are alive; an
//    ereport(ERROR) inside it becomes a pg::Error exception carrying the original ErrorData.
//  - pg::sql_entry(f) is the body of every SQL-callable function that runs C++ code: it turns
//    any exception back into ereport(ERROR) once every C++ object of the call is destroyed.
#pragma once

extern "C" {
#include "postgres.h"
#include "utils/elog.h"
#include "utils/memutils.h"
}

#include <exception>
#include <new>
#include <type_traits>
#include <utility>

namespace pg {

// A PostgreSQL error caught by guarded(), rethrown intact at the SQL boundary.
class Error : public std::exception {
  public:
    explicit Error(ErrorData* data) : data_(data) {}
    ErrorData* data() const { return data_; }
    const char* what() const noexcept override { return data_->message; }

  private:
    ErrorData* data_;  // palloc'd in the memory context that was current at the call
};

template <typename F>
auto guarded(F&& call) -> decltype(call()) {
    using Result = decltype(call());
    static_assert(std::is_void<Result>::value || std::is_trivially_copyable<Result>::value,
                  "guarded() returns plain values: pointers, Datums, scalars");
    MemoryContext caller_context = CurrentMemoryContext;
    ErrorData* volatile error = nullptr;  // assigned in PG_CATCH, read after the longjmp
    // volatile: assigned inside PG_TRY and read after a possible longjmp
    typename std::conditional<std::is_void<Result>::value, int, Result>::type volatile result{};

    PG_TRY();
    {
        if constexpr (std::is_void<Result>::value)
            call();
        else
            result = call();
    }
    PG_CATCH();
    {
        MemoryContextSwitchTo(caller_context);
        error = CopyErrorData();
        FlushErrorState();
    }
    PG_END_TRY();

    if (error != nullptr) throw Error(error);
    if constexpr (!std::is_void<Result>::value) return result;
}

namespace detail {
// What survives the catch block: copied out so that ereport runs with no exception alive.
struct PendingError {
    ErrorData* postgres = nullptr;
    int sqlstate = 0;
    const char* message = nullptr;
};

// Copies a message into static storage without calling anything that can ereport.
const char* keep_message(const char* message) noexcept;

[[noreturn]] void raise(const PendingError& pending);
}  // namespace detail

template <typename F>
Datum sql_entry(F&& body) {
    detail::PendingError pending;
    try {
        return body();
    } catch (const Error& e) {
        pending.postgres = e.data();
    } catch (const std::bad_alloc&) {
        pending.sqlstate = ERRCODE_OUT_OF_MEMORY;
        pending.message = "out of memory";
    } catch (const std::exception& e) {
        pending.sqlstate = ERRCODE_INTERNAL_ERROR;
        pending.message = detail::keep_message(e.what());
    }
    detail::raise(pending);
}

}  // namespace pg

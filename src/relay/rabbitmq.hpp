// rabbitmq-c's headers: 0.12 and later keep them under rabbitmq-c/ and warn on the old names,
// which -Werror makes fatal; Debian 12 ships 0.11, which only has the old names.
#pragma once

#if __has_include(<rabbitmq-c/amqp.h>)
#include <rabbitmq-c/amqp.h>
#include <rabbitmq-c/ssl_socket.h>
#include <rabbitmq-c/tcp_socket.h>
#else
#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#endif

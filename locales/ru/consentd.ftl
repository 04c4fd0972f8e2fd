# Что владелец читает в чате, по-русски.

class-external = внешнее
class-spend = расход
class-destructive = необратимое

state-pending = ждёт вашего ответа
state-card_shown = ждёт вашего ответа
state-granted = одобрено
state-declined = отклонено
state-expired = истекло: ответа не было вовремя
state-refused = отказано
state-running = выполняется
state-executed = выполнено
state-failed = не удалось
state-outcome_unknown = результат неизвестен: действие могло выполниться, а могло и нет

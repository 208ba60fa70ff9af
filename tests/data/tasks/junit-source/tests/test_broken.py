from pkg import missing_name

def test_never():
    pass
